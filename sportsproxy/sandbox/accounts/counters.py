"""Counters in the Django cache, shared by every process that shares the cache (quota, slots)."""

from __future__ import annotations

from django.core.cache import cache


def add_to_counter(key: str, amount: int, timeout: float) -> int | None:
    """Add `amount` to the counter at `key`, creating it with `timeout` if there is none.

    One cache operation when the counter exists (the common case) instead of add-then-incr;
    with Django's Redis cache that is two round trips instead of three. Returns the new value,
    or None when a negative amount finds no counter (it expired: nothing is left to take back).
    """
    try:
        return int(cache.incr(key, amount))
    except ValueError:
        if amount <= 0:
            return None
        if cache.add(key, amount, timeout=timeout):
            return amount
        return int(cache.incr(key, amount))  # another process created it just now
