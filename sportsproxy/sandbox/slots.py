"""Per-account counts of open sockets and subscriptions, shared through the Django cache.

Each holder (one socket) counts itself into time buckets of `heartbeat` seconds: the
bucket it joins in and the one before, then every later bucket as its ticker calls
`refresh()`. An account's count is the larger of the current and previous bucket.
A clean `release()` takes the holder out at once, so counts are exact; a holder that
dies without releasing (a killed worker) is forgotten within two heartbeats.
"""

from __future__ import annotations

import contextlib

from django.core.cache import cache

from sportsproxy.sandbox import clock, conf


def _bucket() -> int:
    return int(clock.now().timestamp() // conf.slot_heartbeat())


def _key(kind: str, account_id: str, bucket: int) -> str:
    return f"sandbox:slots:{kind}:{account_id}:{bucket}"


def held(kind: str, account_id: str) -> int:
    """Slots of `kind` the account holds now, across every process sharing the cache."""
    bucket = _bucket()
    values = cache.get_many([_key(kind, account_id, bucket), _key(kind, account_id, bucket - 1)])
    return max((int(value) for value in values.values()), default=0)


class Slots:
    """One holder's share of an account's count (a socket's connection, or its subscriptions)."""

    def __init__(self, kind: str, account_id: str) -> None:
        self.kind = kind
        self.account_id = account_id
        self.amount = 0
        self._buckets: set[int] = set()

    def acquire(self, limit: int, amount: int = 1) -> bool:
        """Take `amount` slots if the account stays within `limit`; False (and nothing taken) if not."""
        self.refresh()
        if not self._buckets:
            bucket = _bucket()
            self._buckets = {bucket - 1, bucket}  # a newcomer counts where everyone alive is counted
        self._add(amount)
        self.amount += amount
        if held(self.kind, self.account_id) > limit:
            self.release(amount)
            return False
        return True

    def release(self, amount: int | None = None) -> None:
        """Give back `amount` slots (all of them by default)."""
        amount = self.amount if amount is None else amount
        if amount <= 0:
            return
        self.refresh()
        self._add(-amount)
        self.amount -= amount
        if self.amount == 0:
            self._buckets.clear()

    def needs_refresh(self) -> bool:
        """Whether a heartbeat would change anything (a new bucket began): cheap, no cache access."""
        return bool(self.amount) and _bucket() not in self._buckets

    def refresh(self) -> None:
        """Heartbeat: count this holder into the current bucket; forget buckets that expired."""
        bucket = _bucket()
        self._buckets = {held_in for held_in in self._buckets if held_in >= bucket - 1}
        if self.amount and bucket not in self._buckets:
            self._buckets.add(bucket)
            self._change(bucket, self.amount)

    def _add(self, amount: int) -> None:
        for bucket in self._buckets:
            self._change(bucket, amount)

    def _change(self, bucket: int, amount: int) -> None:
        key = _key(self.kind, self.account_id, bucket)
        if amount > 0:
            cache.add(key, 0, timeout=conf.slot_heartbeat() * 3)
        with contextlib.suppress(ValueError):  # the bucket expired: nothing is left to take back
            cache.incr(key, amount)
