"""The sandbox's WebSocket endpoint, `/sdk/v1/ws`: JSON-RPC frames over Django Channels.

The socket authenticates by its first frame (`auth`), never by cookies, so any origin
may connect with a token; an API key on a handshake that carried `Origin` is refused.
Frames are answered by `SocketSession`, i.e. by the same dispatcher as HTTP.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from sportsproxy.sandbox import conf, revocation, simulation
from sportsproxy.sandbox.envelope import error_response
from sportsproxy.sandbox.errors import unauthorized
from sportsproxy.sandbox.sockets import AUTH_EXPIRED, AUTH_REVOKED, CLOSE_UNAUTHORIZED, PING, SocketSession

logger = logging.getLogger(__name__)


class SandboxConsumer(AsyncWebsocketConsumer):
    session: SocketSession
    _ticker: asyncio.Task[None] | None = None
    _group: str | None = None
    _watched_key: str | None = None
    _closing = False

    async def connect(self) -> None:
        headers = dict(self.scope.get("headers", []))
        self.session = SocketSession(from_browser=b"origin" in headers)
        await self.accept()
        self._ticker = asyncio.create_task(self._tick())
        simulation.socket_opened()

    async def disconnect(self, code: int) -> None:
        self._closing = True
        revocation.forget(self)
        if self._ticker is not None:
            self._ticker.cancel()
        if self._group is not None:
            await self.channel_layer.group_discard(self._group, self.channel_name)
        simulation.socket_closed()
        await database_sync_to_async(self.session.close)()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        frame = text_data if text_data is not None else (bytes_data or b"")
        answer, close_code = await database_sync_to_async(self.session.handle_frame)(frame)
        await self._send(answer)
        if close_code is not None:
            await self._close(close_code)
            return
        await self._follow_environment()
        self._watch_key()

    async def key_revoked(self) -> None:
        """The API key this socket authenticated with was revoked (revocation.RevocableSocket)."""
        if not self._closing:
            await self._send(AUTH_REVOKED)
            await self._close(CLOSE_UNAUTHORIZED)

    def _watch_key(self) -> None:
        """Have the revocation watcher follow the socket's API key (tokens outlive their key)."""
        caller = self.session.caller
        key_id = caller.key_id if caller is not None and caller.kind == "api_key" else None
        if key_id == self._watched_key:
            return
        revocation.forget(self)
        if key_id is not None:
            revocation.watch(key_id, self)
        self._watched_key = key_id

    async def match_event(self, message: dict[str, Any]) -> None:
        """A `match.event` from the channel layer: notify each subscription that takes its sport."""
        match = message["match"]
        for subscription_id in self.session.subscribers_of(match["sport"]):
            notification = {
                "jsonrpc": "2.0",
                "method": "matches.event",
                "params": {"subscriptionId": subscription_id, "kind": message["kind"], "match": match},
            }
            await self._send(notification)

    async def _follow_environment(self) -> None:
        """Be in the event group of the caller's environment while the socket has subscriptions
        (a later `auth` with the account's other key may change the environment)."""
        caller = self.session.caller
        wanted = simulation.group_name(caller.env) if caller is not None and self.session.subscriptions else None
        if wanted == self._group:
            return
        if self._group is not None:
            await self.channel_layer.group_discard(self._group, self.channel_name)
        if wanted is not None:
            await self.channel_layer.group_add(wanted, self.channel_name)
        self._group = wanted

    async def _tick(self) -> None:
        try:
            while not self._closing:
                await asyncio.sleep(conf.ws_tick())
                if self.session.auth_overdue():
                    await self._send(_no_auth_in_time())
                    await self._close(CLOSE_UNAUTHORIZED)
                elif self.session.credential_expired():
                    await self._send(AUTH_EXPIRED)
                    await self._close(CLOSE_UNAUTHORIZED)
                elif self.session.heartbeat_due():  # once per heartbeat period, not per tick
                    await database_sync_to_async(self.session.heartbeat)()
                if self.session.ping_due() and not self._closing:
                    await self._send(PING)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("Sandbox socket ticker failed; closing the socket")
            await self._close(1011)

    async def _send(self, frame: dict[str, Any]) -> None:
        self.session.sent()
        await self.send(text_data=json.dumps(frame))

    async def _close(self, code: int) -> None:
        if not self._closing:
            self._closing = True
            await self.close(code)


def _no_auth_in_time() -> dict[str, Any]:
    message = f"No auth frame within {conf.ws_auth_timeout():g} s of connecting."
    return error_response(None, unauthorized(message, "auth_required"))
