"""One heartbeat task per process: every socket's slots are counted into each new time bucket
in one batch (slots.refresh_all), instead of every socket beating on its own."""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async

from sportsproxy.sandbox import conf
from sportsproxy.sandbox.accounts import slots
from sportsproxy.sandbox.realtime import loop_tasks

logger = logging.getLogger(__name__)

_task: asyncio.Task[None] | None = None
_sockets = 0


def socket_opened() -> None:
    """Count a socket in; start the heartbeat in this event loop if it is not running."""
    global _sockets, _task
    _sockets += 1
    _task = loop_tasks.running(_task, _run)


def socket_closed() -> None:
    global _sockets
    _sockets = max(0, _sockets - 1)


async def _run() -> None:
    while _sockets > 0:
        await asyncio.sleep(conf.ws_tick())
        if not slots.refresh_due():  # a new bucket begins every SPORTS_SANDBOX_SLOT_HEARTBEAT seconds
            continue
        try:
            # The same thread as the sockets' frames: slot changes never interleave.
            await database_sync_to_async(slots.refresh_all)()
        except Exception:
            logger.exception("The slot heartbeat failed; it will try again at the next tick")
