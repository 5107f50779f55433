"""Ended credentials reaching open sockets: one watcher per process closes the sockets of revoked keys
and of tokens ended early.

Revoking a key (the admin, `sandbox_key revoke`, another process) and ending a token early
(`/control/v1/tokens/expire`, a test's control call) write the database, so the watcher reads it: about once a
second, one query for the keys behind this process's open API-key sockets and one for the tokens behind
its token sockets. That works with or without REDIS_URL, whichever process ended the credential.
A revoked key closes its own sockets only: a token it minted works until its `exp`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Protocol

from channels.db import database_sync_to_async

from sportsproxy.sandbox.accounts.tokens import ended_among
from sportsproxy.sandbox.models import ApiKey
from sportsproxy.sandbox.realtime import loop_tasks

logger = logging.getLogger(__name__)

CHECK_EVERY_SECONDS = 1.0  # the service's rule: closed within 2 s of the revocation or the early end


class RevocableSocket(Protocol):
    async def key_revoked(self) -> None:
        """Tell the client (`auth.revoked`) and close with 4401."""

    async def token_ended(self) -> None:
        """Tell the client (`auth.expired`) and close with 4401."""


# Open sockets by what they authenticated with: an API key's id, or a token's `jti`.
_sockets: defaultdict[str, set[RevocableSocket]] = defaultdict(set)
_token_sockets: defaultdict[str, set[RevocableSocket]] = defaultdict(set)
_task: asyncio.Task[None] | None = None


def watch(key_id: str, socket: RevocableSocket) -> None:
    """Close `socket` when the key `key_id` is revoked; starts the watcher in this event loop."""
    global _task
    _sockets[key_id].add(socket)
    _task = loop_tasks.running(_task, _run)


def watch_token(token_id: str, socket: RevocableSocket) -> None:
    """Close `socket` when the token `token_id` (its `jti`) is ended early; starts the watcher."""
    global _task
    _token_sockets[token_id].add(socket)
    _task = loop_tasks.running(_task, _run)


def forget(socket: RevocableSocket) -> None:
    for watched_by in (_sockets, _token_sockets):
        for credential in [credential for credential, sockets in watched_by.items() if socket in sockets]:
            watched_by[credential].discard(socket)
            if not watched_by[credential]:
                del watched_by[credential]


def watched() -> int:
    """How many sockets the watcher follows (for tests)."""
    return sum(len(sockets) for watched_by in (_sockets, _token_sockets) for sockets in watched_by.values())


def revoked_among(key_ids: list[str]) -> list[str]:
    return list(
        ApiKey.objects.filter(public_id__in=key_ids, state=ApiKey.State.REVOKED).values_list("public_id", flat=True)
    )


def _ended(key_ids: list[str], token_ids: list[str]) -> tuple[list[str], list[str]]:
    """The revoked keys and the tokens ended early among these (at most two queries, none for an empty list)."""
    return (revoked_among(key_ids) if key_ids else [], ended_among(token_ids) if token_ids else [])


async def _run() -> None:
    while _sockets or _token_sockets:
        await asyncio.sleep(CHECK_EVERY_SECONDS)
        try:
            revoked, ended = await database_sync_to_async(_ended)(list(_sockets), list(_token_sockets))
        except Exception:
            logger.exception("Could not check open sockets' credentials for revocation; trying again")
            continue
        for key_id in revoked:
            for socket in _sockets.pop(key_id, set()):
                await socket.key_revoked()
        for token_id in ended:
            for socket in _token_sockets.pop(token_id, set()):
                await socket.token_ended()
