"""The service's methods, `auth` included, written once for every transport.

A method is a handler and the way its caller is identified: most take the caller the request
carries (the Bearer header over HTTP, the socket's `auth` on a WebSocket), while `auth` names
its caller in its params. `dispatch.call` finds the method, identifies the caller, spends one
request of the caller's quota, and runs the handler, whatever the transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sportsproxy.sandbox import conf
from sportsproxy.sandbox.accounts import tokens
from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.accounts.credentials import (
    auth_params_credential,
    authenticate_auth_params,
    authenticate_bearer,
    bearer_credential,
)
from sportsproxy.sandbox.errors import FORBIDDEN, RpcError, invalid_params, unauthorized
from sportsproxy.sandbox.matches import book
from sportsproxy.sandbox.rpc.params import bounded_int, only_keys, optional_string, string_choices

LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20


class Socket(Protocol):
    """What a method may ask of the WebSocket it was called on (`realtime.sockets.SocketSession` is one)."""

    @property
    def caller(self) -> Caller | None: ...

    def bind(self, caller: Caller) -> None:
        """Make `caller` the socket's credential (the first `auth`, or a refresh of it)."""

    def subscribe(self, sports: list[str] | None) -> str:
        """Start a subscription; returns its id."""

    def unsubscribe(self, subscription_id: str) -> None: ...


@dataclass(frozen=True)
class Context:
    """Where a call came from: over HTTP its Authorization header, on a WebSocket the socket."""

    from_browser: bool  # the request or handshake carried an Origin header
    authorization: str | None = None
    socket: Socket | None = None

    @property
    def transport(self) -> str:
        return "http" if self.socket is None else "websocket"


def request_caller(params: Mapping[str, Any], context: Context) -> Caller:
    """The caller a request carries: its Bearer credential over HTTP, the socket's `auth` on a WebSocket."""
    if context.socket is None:
        return authenticate_bearer(context.authorization, from_browser=context.from_browser)
    if context.socket.caller is None:
        raise unauthorized('Send auth with {"apiKey": ...} or {"token": ...} first.', "auth_required")
    return context.socket.caller


def auth_caller(params: Mapping[str, Any], context: Context) -> Caller:
    """The caller `auth` names: its params on a WebSocket; over HTTP the Bearer credential,
    which params, if given, must repeat (one request names one credential)."""
    if context.socket is not None:
        return authenticate_auth_params(params, from_browser=context.from_browser)
    if not params:
        return authenticate_bearer(context.authorization, from_browser=context.from_browser)
    if auth_params_credential(params) != bearer_credential(context.authorization):
        raise invalid_params("Over HTTP, auth checks the Bearer credential; params, if given, must repeat it.")
    return authenticate_auth_params(params, from_browser=context.from_browser)


def auth_acknowledgement(caller: Caller) -> dict[str, Any]:
    """The `auth` result: what the credential is good for."""
    return {
        "ok": True,
        "expiresAt": caller.expires_at.isoformat() if caller.expires_at else None,
        "tier": caller.tier,
        "env": caller.env,
    }


def auth(params: Mapping[str, Any], caller: Caller, context: Context) -> dict[str, Any]:
    if context.socket is not None:
        context.socket.bind(caller)
    return auth_acknowledgement(caller)


def create_token(params: Mapping[str, Any], caller: Caller, context: Context) -> dict[str, Any]:
    if caller.kind != "api_key":
        raise RpcError(FORBIDDEN, "Tokens cannot mint tokens: call tokens.create with an API key from your backend.")
    only_keys(params, {"ttl"})
    ttl = bounded_int(params, "ttl", low=conf.TTL_MIN, high=conf.TTL_MAX, default=conf.TTL_DEFAULT)
    return tokens.mint(caller, ttl).as_json()


def list_matches(params: Mapping[str, Any], caller: Caller, context: Context) -> dict[str, Any]:
    only_keys(params, {"sports", "limit", "cursor"})
    page = book.list_matches(
        caller.env,
        sports=string_choices(params, "sports", book.SPORTS),
        limit=bounded_int(params, "limit", low=LIMIT_MIN, high=LIMIT_MAX, default=LIMIT_DEFAULT),
        cursor=optional_string(params, "cursor"),
    )
    return page.as_json()


def subscribe(params: Mapping[str, Any], caller: Caller, context: Context) -> dict[str, Any]:
    assert context.socket is not None  # websocket_only: dispatch never calls it without a socket
    only_keys(params, {"sports"})
    sports = string_choices(params, "sports", book.SPORTS)
    return {"subscriptionId": context.socket.subscribe(sports)}


def unsubscribe(params: Mapping[str, Any], caller: Caller, context: Context) -> dict[str, Any]:
    assert context.socket is not None
    only_keys(params, {"subscriptionId"})
    subscription_id = optional_string(params, "subscriptionId")
    if subscription_id is None:
        raise invalid_params("subscriptionId is required: the value matches.subscribe returned.")
    context.socket.unsubscribe(subscription_id)
    return {"ok": True}


Handler = Callable[[Mapping[str, Any], Caller, Context], dict[str, Any]]
Identify = Callable[[Mapping[str, Any], Context], Caller]


@dataclass(frozen=True)
class Method:
    handler: Handler
    identify: Identify = request_caller
    websocket_only: bool = False


METHODS: dict[str, Method] = {
    "auth": Method(auth, identify=auth_caller),
    "tokens.create": Method(create_token),
    "matches.list": Method(list_matches),
    "matches.subscribe": Method(subscribe, websocket_only=True),
    "matches.unsubscribe": Method(unsubscribe, websocket_only=True),
}
