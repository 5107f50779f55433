"""Connection and subscription counts stay exact, and a dead holder's slots expire."""

from __future__ import annotations

from typing import Any

import pytest

from sportsproxy.sandbox import conf
from sportsproxy.sandbox.accounts import counters, slots
from sportsproxy.sandbox.accounts.slots import Slots, held
from sportsproxy.sandbox.clock import ManualClock


def test_a_thousand_acquire_release_cycles_leave_no_slot(clock: ManualClock) -> None:
    for cycle in range(1000):
        holder = Slots("connections", "acct_x")
        assert holder.acquire(limit=5)
        if cycle % 100 == 0:
            clock.advance(conf.slot_heartbeat() / 3)  # cycles straddle bucket boundaries too
            holder.refresh()
        holder.release()
    assert held("connections", "acct_x") == 0


def test_the_limit_is_exact_across_holders(clock: ManualClock) -> None:
    holders = [Slots("connections", "acct_y") for _ in range(3)]
    assert [holder.acquire(limit=2) for holder in holders] == [True, True, False]
    assert held("connections", "acct_y") == 2
    holders[0].release()
    assert holders[2].acquire(limit=2)
    assert held("connections", "acct_y") == 2


def test_a_killed_workers_slots_are_forgotten_within_two_heartbeats(clock: ManualClock) -> None:
    survivor, killed = Slots("subscriptions", "acct_z"), Slots("subscriptions", "acct_z")
    assert survivor.acquire(limit=10, amount=3)
    assert killed.acquire(limit=10, amount=4)
    assert held("subscriptions", "acct_z") == 7
    for _ in range(3):  # only the survivor keeps its heartbeat
        clock.advance(conf.slot_heartbeat())
        survivor.refresh()
    assert held("subscriptions", "acct_z") == 3
    survivor.release(3)
    assert held("subscriptions", "acct_z") == 0


class CountingCache:
    """The real cache, noting the keys of the writes that go through it."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.written: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.real, name)
        if name not in ("add", "incr"):
            return attribute

        def write(key: str, *args: Any, **kwargs: Any) -> Any:
            self.written.append(key)
            return attribute(key, *args, **kwargs)

        return write


def test_one_heartbeat_for_a_thousand_holders_writes_once_per_kind_and_account(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    holders = [Slots("connections", f"acct_batch_{index % 2}") for index in range(1000)]
    for holder in holders:
        assert holder.acquire(limit=10_000)
    counting = CountingCache(counters.cache)
    monkeypatch.setattr(counters, "cache", counting)
    for _ in range(3):  # three buckets later, only the batch heartbeat has kept them counted
        clock.advance(conf.slot_heartbeat())
        assert slots.refresh_due()
        assert slots.refresh_all() >= 1000  # ours, and any another test left alive
        assert not slots.refresh_due()
    ours = [key for key in counting.written if "acct_batch_" in key]
    assert len(ours) == 3 * 2 * 2  # per bucket and account: a counter to create (incr misses, add)
    assert held("connections", "acct_batch_0") == held("connections", "acct_batch_1") == 500
    for holder in holders:
        holder.release()
    assert held("connections", "acct_batch_0") == held("connections", "acct_batch_1") == 0
