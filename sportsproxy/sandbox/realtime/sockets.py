"""One WebSocket's state and frame handling, kept synchronous and free of Channels.

The consumer (`consumers.py`) only moves frames and timers; everything a frame means
is decided here, through the same `dispatch.respond` and `dispatch.call` as HTTP.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from sportsproxy import service
from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.accounts.keys import key_is_active
from sportsproxy.sandbox.accounts.slots import Slots
from sportsproxy.sandbox.accounts.tokens import ended_early
from sportsproxy.sandbox.errors import (
    INVALID_PARAMS,
    RATE_LIMITED,
    UNAUTHORIZED,
    RpcError,
    invalid_params,
    unauthorized,
)
from sportsproxy.sandbox.matches.book import SPORTS
from sportsproxy.sandbox.rpc.dispatch import call, respond
from sportsproxy.sandbox.rpc.envelope import RpcRequest, error_response
from sportsproxy.sandbox.rpc.methods import Context

CLOSE_UNAUTHORIZED = service.CLOSE_UNAUTHORIZED
AUTH_EXPIRED = {"jsonrpc": "2.0", "method": service.AUTH_EXPIRED, "params": {}}
AUTH_REVOKED = {"jsonrpc": "2.0", "method": service.AUTH_REVOKED, "params": {}}
CLOSE_RATE_LIMITED = service.CLOSE_RATE_LIMITED
# The service's liveness rule: a socket sent nothing for SPORTS_SANDBOX_WS_PING_AFTER seconds (25) gets a `ping`
# (clients treat 60 s without any frame as a dead connection).
PING = {"jsonrpc": "2.0", "method": "ping", "params": {}}

Envelope = dict[str, Any]


class SocketSession:
    """What one socket knows: its caller (after `auth`), its subscriptions and its slots.

    It is the `methods.Socket` its calls run with: `auth` binds a caller, the subscription
    methods subscribe and unsubscribe.
    """

    def __init__(self, *, from_browser: bool) -> None:
        self.from_browser = from_browser
        self._context = Context(from_browser=from_browser, socket=self)
        self.connected_at: datetime = clock.now()
        self.last_sent_at: datetime = self.connected_at
        self.caller: Caller | None = None
        self.subscriptions: dict[str, frozenset[str]] = {}
        self._connection: Slots | None = None
        self._subscription_slots: Slots | None = None

    # --- frames -------------------------------------------------------------------

    def handle_frame(self, frame: str | bytes) -> tuple[Envelope, int | None]:
        """The answer to one frame, and the close code if the socket must close after it."""
        if self.caller is None:
            return self._first_frame(frame)
        if self.credential_expired() or self._token_ended():  # between two ticks: never serve an ended token
            return AUTH_EXPIRED, CLOSE_UNAUTHORIZED
        if self.caller.kind == "api_key" and not key_is_active(self.caller.key_id):
            refusal = unauthorized(
                f"API key {self.caller.key_id} has been revoked; this socket is closed.", "revoked_key"
            )
            return error_response(None, refusal), CLOSE_UNAUTHORIZED
        return respond(frame, self._call), None

    def _first_frame(self, frame: str | bytes) -> tuple[Envelope, int | None]:
        answer = respond(frame, self._expect_auth)
        if "result" in answer:
            return answer, None
        error = answer["error"]
        if error["code"] == RATE_LIMITED:
            return answer, CLOSE_RATE_LIMITED
        if error["code"] not in (UNAUTHORIZED, INVALID_PARAMS, RATE_LIMITED):
            answer = error_response(
                answer["id"], unauthorized("The first frame must be an auth call.", "auth_required")
            )
        return answer, CLOSE_UNAUTHORIZED

    def _expect_auth(self, request: RpcRequest) -> dict[str, Any]:
        if request.method != "auth":
            raise unauthorized('The first frame must be auth with {"apiKey": ...} or {"token": ...}.', "auth_required")
        return self._call(request)

    def _call(self, request: RpcRequest) -> dict[str, Any]:
        return call(request, self._context)

    # --- what methods ask of the socket (methods.Socket) ---------------------------

    def bind(self, caller: Caller) -> None:
        """Take `caller` as this socket's credential: the first one takes a connection slot,
        a later one (a refresh) must belong to the same account."""
        if self.caller is not None and caller.account_id != self.caller.account_id:
            raise unauthorized("A later auth frame must carry a credential of the same account.", "invalid_token")
        if self.caller is None:
            connection = Slots("connections", caller.account_id)
            limit = conf.rate_class(caller.rate_class).connections
            if not connection.acquire(limit):
                raise RpcError(
                    RATE_LIMITED,
                    f"This account already has its {limit} connections open; close one first.",
                    {"limit": "connections"},
                )
            self._connection = connection
            self._subscription_slots = Slots("subscriptions", caller.account_id)
        self.caller = caller

    def subscribe(self, sports: list[str] | None) -> str:
        assert self.caller is not None
        assert self._subscription_slots is not None
        limit = conf.rate_class(self.caller.rate_class).subscriptions
        if not self._subscription_slots.acquire(limit):
            raise RpcError(
                RATE_LIMITED,
                f"This account already has its {limit} subscriptions; unsubscribe one first.",
                {"limit": "subscriptions"},
            )
        subscription_id = f"sub_{secrets.token_hex(8)}"
        self.subscriptions[subscription_id] = frozenset(SPORTS if sports is None else sports)
        return subscription_id

    def unsubscribe(self, subscription_id: str) -> None:
        if self.subscriptions.pop(subscription_id, None) is None:
            raise invalid_params(f"No subscription {subscription_id!r} on this socket.")
        assert self._subscription_slots is not None
        self._subscription_slots.release(1)

    def subscribers_of(self, sport: str) -> list[str]:
        """This socket's subscription ids whose sports filter takes `sport`."""
        return [subscription_id for subscription_id, sports in self.subscriptions.items() if sport in sports]

    # --- time ---------------------------------------------------------------------

    def auth_overdue(self) -> bool:
        return self.caller is None and (clock.now() - self.connected_at).total_seconds() >= conf.ws_auth_timeout()

    def _token_ended(self) -> bool:
        """The token this socket authenticated with was ended early (the watcher closes it within 2 s)."""
        return self.caller is not None and self.caller.token_id is not None and ended_early(self.caller.token_id)

    def credential_expired(self) -> bool:
        return self.caller is not None and self.caller.expires_at is not None and clock.now() >= self.caller.expires_at

    def next_moment(self) -> datetime:
        """When a check below can next come true: the auth deadline before `auth`; after it, the
        credential's expiry or the next ping, whichever is first."""
        if self.caller is None:
            return self.connected_at + timedelta(seconds=conf.ws_auth_timeout())
        ping_at = self.last_sent_at + timedelta(seconds=conf.ws_ping_after())
        expires_at = self.caller.expires_at
        return ping_at if expires_at is None else min(ping_at, expires_at)

    def sent(self) -> None:
        """Note that the socket was just sent a frame."""
        self.last_sent_at = clock.now()

    def ping_due(self) -> bool:
        return (clock.now() - self.last_sent_at).total_seconds() >= conf.ws_ping_after()

    def close(self) -> None:
        """Give back every slot this socket held (idempotent)."""
        for slots in (self._connection, self._subscription_slots):
            if slots is not None:
                slots.release()
        self.subscriptions.clear()
