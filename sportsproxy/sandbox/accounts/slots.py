"""Per-account counts of open sockets and subscriptions, shared through the Django cache.

Each holder (one socket) counts itself into time buckets of `heartbeat` seconds: the bucket it
joins in and the one before, then every later bucket when the process's heartbeat job
(realtime/heartbeat.py) calls `refresh_all()`, which makes one cache change per kind and account
for all of the process's holders. An account's count is the larger of the current and previous bucket. A clean
`release()` takes the holder out at once, so counts are exact; a holder that dies without
releasing (a killed worker) is forgotten within two heartbeats.
"""

from __future__ import annotations

import weakref
from collections import Counter

from django.core.cache import cache

from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.accounts.counters import add_to_counter


def _bucket() -> int:
    return int(clock.now().timestamp() // conf.slot_heartbeat())


def _key(kind: str, account_id: str, bucket: int) -> str:
    return f"sandbox:slots:{kind}:{account_id}:{bucket}"


# The holders of this process with slots held: refresh_all() beats for all of them at once.
_holders: weakref.WeakSet[Slots] = weakref.WeakSet()
_refreshed_bucket: int | None = None


def refresh_due() -> bool:
    """Whether a new bucket began since the last refresh_all(): cheap, no cache access."""
    return _bucket() != _refreshed_bucket


def refresh_all() -> int:
    """One heartbeat for every holder of this process: one cache change per kind and account,
    however many sockets hold its slots. Returns how many holders it counted in."""
    global _refreshed_bucket
    bucket = _refreshed_bucket = _bucket()
    totals: Counter[tuple[str, str]] = Counter()
    due = [holder for holder in list(_holders) if holder.amount and bucket not in holder._buckets]
    for holder in due:
        holder._buckets = {held_in for held_in in holder._buckets if held_in >= bucket - 1} | {bucket}
        totals[(holder.kind, holder.account_id)] += holder.amount
    for (kind, account_id), amount in totals.items():
        _change(kind, account_id, bucket, amount)
    return len(due)


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
        _holders.add(self)
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
            _holders.discard(self)

    def refresh(self) -> None:
        """Heartbeat: count this holder into the current bucket; forget buckets that expired."""
        bucket = _bucket()
        self._buckets = {held_in for held_in in self._buckets if held_in >= bucket - 1}
        if self.amount and bucket not in self._buckets:
            self._buckets.add(bucket)
            _change(self.kind, self.account_id, bucket, self.amount)

    def _add(self, amount: int) -> None:
        for bucket in self._buckets:
            _change(self.kind, self.account_id, bucket, amount)


def _change(kind: str, account_id: str, bucket: int, amount: int) -> None:
    add_to_counter(_key(kind, account_id, bucket), amount, timeout=conf.slot_heartbeat() * 3)
