"""Background tasks kept one per process: started in the running event loop when first needed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


def running(task: asyncio.Task[None] | None, run: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
    """`task` while it runs in this event loop; otherwise `run()` started in it (tests run one
    loop after another, and a task ends when it has nothing left to do)."""
    loop = asyncio.get_running_loop()
    if task is None or task.done() or task.get_loop() is not loop:
        return loop.create_task(run())
    return task
