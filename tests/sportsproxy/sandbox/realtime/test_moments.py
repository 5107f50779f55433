"""The per-process timer of sockets' moments (deadline, expiry, ping): one task, exact moments."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from typing import Any

from sportsproxy.sandbox import clock
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.realtime import moments


class FakeSocket:
    """A moments.Timed that records when its moments came and, like a socket, then plans `then`."""

    def __init__(self, at: datetime | None, then: datetime | None = None) -> None:
        self.at = at
        self.then = then
        self.reached: list[datetime] = []
        self.event = asyncio.Event()

    def next_moment(self) -> datetime | None:
        return self.at

    def moment_reached(self) -> None:
        self.reached.append(clock.now())
        self.at, self.then = self.then, None
        self.event.set()
        moments.schedule(self)


def in_seconds(seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)


def timer_tasks() -> list[asyncio.Task[Any]]:
    return [task for task in asyncio.all_tasks() if task.get_coro().__qualname__ == moments._run.__qualname__]


async def test_a_moment_comes_at_its_time_not_at_the_next_tick(settings: Any) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 60  # a polling timer would wait a minute
    socket = FakeSocket(in_seconds(0.2))
    started = time.monotonic()
    moments.schedule(socket)
    await asyncio.wait_for(socket.event.wait(), 5)
    assert 0.2 <= time.monotonic() - started < 5
    assert len(socket.reached) == 1


async def test_an_earlier_moment_wakes_the_timer_that_sleeps_towards_a_later_one(settings: Any) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 60
    later, sooner = FakeSocket(in_seconds(30)), FakeSocket(None)
    moments.schedule(later)
    await asyncio.sleep(0.05)  # the timer now sleeps towards `later`
    sooner.at = in_seconds(0.1)
    moments.schedule(sooner)
    await asyncio.wait_for(sooner.event.wait(), 5)
    assert later.reached == []
    moments.forget(later)


async def test_a_socket_asks_again_and_only_its_live_moment_counts(settings: Any, clock: ManualClock) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 0.01
    socket = FakeSocket(in_seconds(20), then=in_seconds(60))
    moments.schedule(socket)
    socket.at = in_seconds(5)  # e.g. a token that expires before the next ping
    moments.schedule(socket)
    socket.at = in_seconds(30)
    moments.schedule(socket)  # later than the planned moment: that one stands and will ask again
    assert moments.planned() == 1

    clock.advance(5)
    await asyncio.wait_for(socket.event.wait(), 5)
    clock.advance(20)  # the stale 20 s entry must not call the socket a second time
    await asyncio.sleep(0.1)
    assert socket.reached == [clock.now() - timedelta(seconds=20)]
    assert moments.planned() == 1  # its next moment, 60 s from the start
    moments.forget(socket)


async def test_a_forgotten_socket_is_never_called(settings: Any, clock: ManualClock) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 0.01
    gone, alive = FakeSocket(in_seconds(1)), FakeSocket(in_seconds(2))
    moments.schedule(gone)
    moments.schedule(alive)
    moments.forget(gone)
    clock.advance(3)
    await asyncio.wait_for(alive.event.wait(), 5)
    assert gone.reached == []


async def test_a_thousand_sockets_share_one_timer_task(settings: Any, clock: ManualClock) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 0.01
    sockets = [FakeSocket(in_seconds(1 + index % 7)) for index in range(1_000)]
    for socket in sockets:
        moments.schedule(socket)
    assert len(timer_tasks()) == 1
    assert moments.planned() == 1_000

    clock.advance(10)
    await asyncio.wait_for(asyncio.gather(*(socket.event.wait() for socket in sockets)), 5)
    assert all(len(socket.reached) == 1 for socket in sockets)
    await asyncio.sleep(0.05)
    assert timer_tasks() == []  # nothing planned: the task ends
