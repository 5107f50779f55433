"""The sandbox's WebSocket endpoint, `/sdk/v1/ws`: JSON-RPC frames over Django Channels.

The socket authenticates by its first frame (`auth`), never by cookies, so any origin
may connect with a token; an API key on a handshake that carried `Origin` is refused.
Frames are answered by `SocketSession`, i.e. by the same dispatcher as HTTP.

Everything the socket sends goes through one outbox, in order, written by one task: a client
that stops reading holds up only its own writer. When more than MAX_BACKLOG frames wait, the
backlog is dropped and the socket is closed with 4008 instead of growing the server's memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from sportsproxy import service
from sportsproxy.sandbox import conf
from sportsproxy.sandbox.errors import unauthorized
from sportsproxy.sandbox.realtime import fanout, heartbeat, moments, publisher, revocation
from sportsproxy.sandbox.realtime.sockets import AUTH_EXPIRED, AUTH_REVOKED, CLOSE_UNAUTHORIZED, PING, SocketSession
from sportsproxy.sandbox.rpc.envelope import error_response

logger = logging.getLogger(__name__)

NO_CHANNEL_OF_ITS_OWN = "none"  # an alias with no layer: get_channel_layer() answers None
MAX_BACKLOG = 1_000
CLOSE_BACKLOG = service.CLOSE_BACKLOG
CLOSE_INTERNAL_ERROR = 1011
# The process's jobs that run while any of its sockets is open.
JOBS = (publisher.job, heartbeat.job)


class SandboxConsumer(AsyncWebsocketConsumer):
    # Events reach sockets through the process's fanout.Hub (one channel per process). Channels
    # would otherwise give every socket a channel of its own, and a layer receive waiting on it:
    # a Redis subscription per socket with RedisPubSubChannelLayer, a queue per socket in memory.
    channel_layer_alias = NO_CHANNEL_OF_ITS_OWN

    session: SocketSession
    _outbox: asyncio.Queue[str | int]  # frames to send, then a close code last
    _writer: asyncio.Task[None] | None = None
    _groups: frozenset[str] = frozenset()
    _watched: tuple[str, str] | None = None  # ("api_key", key id) or ("token", jti)
    _closing = False

    async def connect(self) -> None:
        headers = dict(self.scope.get("headers", []))
        self.session = SocketSession(from_browser=b"origin" in headers)
        self._outbox = asyncio.Queue()
        await self.accept()
        self._writer = asyncio.create_task(self._write())
        moments.schedule(self)
        for job in JOBS:
            job.socket_opened()

    async def disconnect(self, code: int) -> None:
        self._closing = True
        revocation.forget(self)
        moments.forget(self)
        if self._writer is not None:
            self._writer.cancel()
        await self._follow(frozenset())
        for job in JOBS:
            job.socket_closed()
        await database_sync_to_async(self.session.close)()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        frame = text_data if text_data is not None else (bytes_data or b"")
        answer, close_code = await database_sync_to_async(self.session.handle_frame)(frame)
        self._send(answer)
        if close_code is not None:
            self._close(close_code)
            return
        await self._follow(self._wanted_groups())
        self._watch_key()
        moments.schedule(self)  # an auth moves the deadline to the credential's expiry

    # --- what other parts of the process call -------------------------------------

    def deliver(self, sport: str, tail: str) -> None:
        """An event of a sport this socket's groups carry (fanout.Listener): one frame per subscription."""
        for subscription_id in self.session.subscribers_of(sport):
            self._enqueue(fanout.event_frame(subscription_id, tail))

    async def key_revoked(self) -> None:
        """The API key this socket authenticated with was revoked (revocation.RevocableSocket)."""
        self._send(AUTH_REVOKED)
        self._close(CLOSE_UNAUTHORIZED)

    async def token_ended(self) -> None:
        """The token this socket authenticated with was ended early (revocation.RevocableSocket)."""
        self._send(AUTH_EXPIRED)
        self._close(CLOSE_UNAUTHORIZED)

    # --- sending, in order, through the outbox ----------------------------------------

    def _send(self, frame: dict[str, Any]) -> None:
        self._enqueue(json.dumps(frame))

    def _enqueue(self, text: str) -> None:
        if self._closing:
            return
        if self._outbox.qsize() >= MAX_BACKLOG:
            self._drop_backlog()
            return
        self.session.sent()
        self._outbox.put_nowait(text)

    def _close(self, code: int) -> None:
        """Close once the frames already queued are sent."""
        if not self._closing:
            self._closing = True
            self._outbox.put_nowait(code)

    def _drop_backlog(self) -> None:
        """A client that does not read: forget what it has not read, and close with 4008."""
        logger.warning("Closing a socket whose client stopped reading (%d frames waiting)", self._outbox.qsize())
        while not self._outbox.empty():
            self._outbox.get_nowait()
        self._close(CLOSE_BACKLOG)

    async def _write(self) -> None:
        try:
            while True:
                item = await self._outbox.get()
                if isinstance(item, int):
                    await self.close(item)
                    return
                await self.send(text_data=item)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the client went away mid-send: disconnect() follows
            logger.debug("Socket writer stopped: %s", type(error).__name__)

    # --- membership, revocation, moments ---------------------------------------------

    def _wanted_groups(self) -> frozenset[str]:
        """The groups of the sports this socket's subscriptions take, in the caller's environment."""
        caller = self.session.caller
        if caller is None:
            return frozenset()
        sports = frozenset[str]().union(*self.session.subscriptions.values())
        return frozenset(fanout.group_name(caller.env, sport) for sport in sports)

    async def _follow(self, wanted: frozenset[str]) -> None:
        """Be in exactly the `wanted` groups (subscriptions and a later `auth` may change them)."""
        current, self._groups = self._groups, wanted
        hub = fanout.hub()
        for group in current - wanted:
            await hub.leave(group, self)
        for group in wanted - current:
            await hub.join(group, self)

    def _watch_key(self) -> None:
        """Have the watcher follow the socket's credential: its API key's revocation, or its token's early
        end (a token outlives its key's revocation)."""
        caller = self.session.caller
        watched = (caller.kind, caller.token_id or caller.key_id) if caller is not None else None
        if watched == self._watched:
            return
        revocation.forget(self)
        if watched is not None and watched[0] == "api_key":
            revocation.watch(watched[1], self)
        elif watched is not None:
            revocation.watch_token(watched[1], self)
        self._watched = watched

    def next_moment(self) -> datetime | None:
        """moments.Timed: when the auth deadline, the expiry or the next ping comes."""
        return None if self._closing else self.session.next_moment()

    def moment_reached(self) -> None:
        """moments.Timed: close on a missed auth deadline or an expired credential, or ping."""
        if self._closing:
            return
        try:
            if self.session.auth_overdue():
                self._send(_no_auth_in_time())
                self._close(CLOSE_UNAUTHORIZED)
            elif self.session.credential_expired():
                self._send(AUTH_EXPIRED)
                self._close(CLOSE_UNAUTHORIZED)
            elif self.session.ping_due():
                self._send(PING)
            moments.schedule(self)
        except Exception:
            logger.exception("A sandbox socket failed at its timed moment; closing it")
            self._close(CLOSE_INTERNAL_ERROR)


def _no_auth_in_time() -> dict[str, Any]:
    message = f"No auth frame within {conf.ws_auth_timeout():g} s of connecting."
    return error_response(None, unauthorized(message, "auth_required"))
