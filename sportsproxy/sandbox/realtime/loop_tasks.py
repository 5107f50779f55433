"""Background tasks kept one per process: started in the running event loop when first needed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from sportsproxy.sandbox import conf

logger = logging.getLogger(__name__)


def running(task: asyncio.Task[None] | None, run: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
    """`task` while it runs in this event loop; otherwise `run()` started in it (tests run one
    loop after another, and a task ends when it has nothing left to do)."""
    loop = asyncio.get_running_loop()
    if task is None or task.done() or task.get_loop() is not loop:
        return loop.create_task(run())
    return task


def always() -> bool:
    return True


class SocketJob:
    """A job of this process that awaits `step` once a tick while any of its sockets is open.

    Sockets count themselves in and out. The first one in starts the job's one task in its event
    loop (unless `enabled()` says another process does the work), and the task ends at the first
    tick that finds no socket open. A step that fails is logged; the next tick tries again.
    """

    def __init__(self, name: str, step: Callable[[], Awaitable[object]], enabled: Callable[[], bool] = always) -> None:
        self.name = name
        self._step = step
        self._enabled = enabled
        self._sockets = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The job's task, running or ended (None before the first socket; for tests)."""
        return self._task

    @property
    def sockets(self) -> int:
        """How many sockets are counted in (for tests)."""
        return self._sockets

    def socket_opened(self) -> None:
        """Count a socket in; start the job in this event loop if it is not running there."""
        self._sockets += 1
        if self._enabled():
            self._task = running(self._task, self._run)

    def socket_closed(self) -> None:
        self._sockets = max(0, self._sockets - 1)

    async def _run(self) -> None:
        while self._sockets > 0:
            try:
                await self._step()
            except Exception:
                logger.exception("The sandbox's %s failed a step; it will try again at the next tick", self.name)
            await asyncio.sleep(conf.ws_tick())
