"""One timer task per process for every socket's next moment: its auth deadline, its credential's
expiry, or its next `ping`.

Each socket has at most one live entry in a heap, keyed by the moment it asked for. The task
sleeps until the earliest entry (on the sandbox clock), asks that socket to act (`moment_reached`),
and the socket schedules its next moment. Nothing polls per socket: an idle socket costs one
wake-up per ping interval, whatever the number of sockets.

A socket that sends a frame pushes its ping further away without touching the heap: when the
old moment comes, the socket finds no ping due and schedules the real one (a lazy timer).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from datetime import datetime
from typing import Protocol

from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.realtime import loop_tasks

logger = logging.getLogger(__name__)


class Timed(Protocol):
    def next_moment(self) -> datetime | None:
        """When the socket next needs attention (None: never)."""

    def moment_reached(self) -> None:
        """Do what is due now (ping, or close on a deadline or expiry); must not block."""


_heap: list[tuple[datetime, int, Timed]] = []
_planned: dict[Timed, datetime] = {}  # each socket's one live entry; other heap entries are stale
_order = itertools.count()  # ties on a moment never compare sockets
_task: asyncio.Task[None] | None = None
_sleep: asyncio.Future[None] | None = None  # what the task awaits between moments
# Moments this close together are handled in one wake-up: a thousand pings due within a second
# cost a few dozen wake-ups, and nothing comes more than this late.
BATCH_SECONDS = 0.02


def schedule(socket: Timed) -> None:
    """Plan `socket`'s next moment, unless one at or before it is already planned (that one will
    ask the socket again). Starts this event loop's timer task if it is not running."""
    global _task, _sleep
    task = loop_tasks.running(_task, _run)
    if task is not _task:  # a new task, in this event loop: what an earlier loop left is dead
        _heap.clear()
        _planned.clear()
        _task, _sleep = task, None
    moment = socket.next_moment()
    if moment is None:
        forget(socket)
        return
    planned = _planned.get(socket)
    if planned is not None and planned <= moment:
        return
    _planned[socket] = moment
    heapq.heappush(_heap, (moment, next(_order), socket))
    if _heap[0][2] is socket:
        _wake_up()  # earlier than what the task sleeps towards


def forget(socket: Timed) -> None:
    """No more moments for `socket` (it closed); its heap entries are dropped when they come up."""
    _planned.pop(socket, None)


def planned() -> int:
    """How many sockets have a moment planned (for tests)."""
    return len(_planned)


def _wake_up() -> None:
    if _sleep is not None and not _sleep.done():
        _sleep.set_result(None)


async def _run() -> None:
    global _sleep
    loop = asyncio.get_running_loop()
    while True:
        now = clock.now()
        while _heap and _heap[0][0] <= now:
            moment, _, socket = heapq.heappop(_heap)
            if _planned.get(socket) != moment:
                continue  # stale: replaced by an earlier moment, or the socket closed
            del _planned[socket]
            try:
                socket.moment_reached()
            except Exception:
                logger.exception("A sandbox socket failed at its timed moment")
        while _heap and _heap[0][2] not in _planned:
            heapq.heappop(_heap)
        if not _heap:
            return
        # Sleep until the earliest moment, on the sandbox clock; at most one tick, so that an
        # injected clock that jumps (tests) is noticed within a tick. schedule() wakes it earlier.
        delay = min((_heap[0][0] - clock.now()).total_seconds(), conf.ws_tick())
        _sleep = loop.create_future()
        timer = loop.call_later(max(delay, BATCH_SECONDS), _wake_up)
        try:
            await _sleep
        finally:
            timer.cancel()
