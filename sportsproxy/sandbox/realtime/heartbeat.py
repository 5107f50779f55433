"""The slot heartbeat, one job per process: every socket's slots are counted into each new time
bucket in one batch (slots.refresh_all), instead of every socket beating on its own."""

from __future__ import annotations

from channels.db import database_sync_to_async

from sportsproxy.sandbox.accounts import slots
from sportsproxy.sandbox.realtime.loop_tasks import SocketJob


async def beat() -> None:
    """Count this process's slot holders into the current bucket, once per bucket."""
    if slots.refresh_due():  # a new bucket begins every SPORTS_SANDBOX_SLOT_HEARTBEAT seconds
        # The same thread as the sockets' frames: slot changes never interleave.
        await database_sync_to_async(slots.refresh_all)()


job = SocketJob("slot heartbeat", beat)
