"""Revocation reaching open sockets: one watcher per process closes the sockets of revoked keys.

Revoking a key (the admin, `sandbox_key revoke`, another process) writes only the database, so
the watcher reads it: about once a second, one query for the keys behind this process's open
API-key sockets. That works with or without REDIS_URL, whichever process revoked the key.
Sockets on tokens the key minted are not watched: a token works until its `exp`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Protocol

from channels.db import database_sync_to_async

from sportsproxy.sandbox.models import ApiKey
from sportsproxy.sandbox.realtime import loop_tasks

logger = logging.getLogger(__name__)

CHECK_EVERY_SECONDS = 1.0  # the service's rule: closed within 2 s of the revocation


class RevocableSocket(Protocol):
    async def key_revoked(self) -> None:
        """Tell the client (`auth.revoked`) and close with 4401."""


_sockets: defaultdict[str, set[RevocableSocket]] = defaultdict(set)
_task: asyncio.Task[None] | None = None


def watch(key_id: str, socket: RevocableSocket) -> None:
    """Close `socket` when the key `key_id` is revoked; starts the watcher in this event loop."""
    global _task
    _sockets[key_id].add(socket)
    _task = loop_tasks.running(_task, _run)


def forget(socket: RevocableSocket) -> None:
    for key_id in [key_id for key_id, sockets in _sockets.items() if socket in sockets]:
        _sockets[key_id].discard(socket)
        if not _sockets[key_id]:
            del _sockets[key_id]


def watched() -> int:
    """How many sockets the watcher follows (for tests)."""
    return sum(len(sockets) for sockets in _sockets.values())


def revoked_among(key_ids: list[str]) -> list[str]:
    return list(
        ApiKey.objects.filter(public_id__in=key_ids, state=ApiKey.State.REVOKED).values_list("public_id", flat=True)
    )


async def _run() -> None:
    while _sockets:
        await asyncio.sleep(CHECK_EVERY_SECONDS)
        try:
            revoked = await database_sync_to_async(revoked_among)(list(_sockets))
        except Exception:
            logger.exception("Could not check open sockets' keys for revocation; trying again")
            continue
        for key_id in revoked:
            for socket in _sockets.pop(key_id, set()):
                await socket.key_revoked()
