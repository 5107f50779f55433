"""The service's methods, written once for every transport.

Each method takes its params (it validates them) and the call's Context, and returns a
result object or raises RpcError. `dispatch.py` finds them in METHODS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sportsproxy.sandbox import matches, tokens
from sportsproxy.sandbox.caller import Caller
from sportsproxy.sandbox.errors import FORBIDDEN, RpcError, invalid_params
from sportsproxy.sandbox.params import bounded_int, only_keys, optional_string, string_choices

if TYPE_CHECKING:
    from sportsproxy.sandbox.sockets import SocketSession

TTL_MIN, TTL_MAX, TTL_DEFAULT = 60, 86400, 600
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20


@dataclass(frozen=True)
class Context:
    """Who is calling, and over a WebSocket, the socket (for its subscriptions)."""

    caller: Caller
    socket: SocketSession | None = None


def auth_acknowledgement(caller: Caller) -> dict[str, Any]:
    """The `auth` result: what the credential is good for."""
    return {
        "ok": True,
        "expiresAt": caller.expires_at.isoformat() if caller.expires_at else None,
        "tier": caller.tier,
        "env": caller.env,
    }


def create_token(params: Mapping[str, Any], context: Context) -> dict[str, Any]:
    caller = context.caller
    if caller.kind != "api_key":
        raise RpcError(FORBIDDEN, "Tokens cannot mint tokens: call tokens.create with an API key from your backend.")
    only_keys(params, {"ttl"})
    ttl = bounded_int(params, "ttl", low=TTL_MIN, high=TTL_MAX, default=TTL_DEFAULT)
    return tokens.mint(caller, ttl).as_json()


def list_matches(params: Mapping[str, Any], context: Context) -> dict[str, Any]:
    only_keys(params, {"sports", "limit", "cursor"})
    page = matches.list_matches(
        context.caller.env,
        sports=string_choices(params, "sports", matches.SPORTS),
        limit=bounded_int(params, "limit", low=LIMIT_MIN, high=LIMIT_MAX, default=LIMIT_DEFAULT),
        cursor=optional_string(params, "cursor"),
    )
    return page.as_json()


def subscribe(params: Mapping[str, Any], context: Context) -> dict[str, Any]:
    assert context.socket is not None  # websocket_only: dispatch never calls it without a socket
    only_keys(params, {"sports"})
    sports = string_choices(params, "sports", matches.SPORTS)
    return {"subscriptionId": context.socket.subscribe(sports)}


def unsubscribe(params: Mapping[str, Any], context: Context) -> dict[str, Any]:
    assert context.socket is not None
    only_keys(params, {"subscriptionId"})
    subscription_id = optional_string(params, "subscriptionId")
    if subscription_id is None:
        raise invalid_params("subscriptionId is required: the value matches.subscribe returned.")
    context.socket.unsubscribe(subscription_id)
    return {"ok": True}


Handler = Callable[[Mapping[str, Any], Context], dict[str, Any]]


@dataclass(frozen=True)
class Method:
    handler: Handler
    websocket_only: bool = False


METHODS: dict[str, Method] = {
    "tokens.create": Method(create_token),
    "matches.list": Method(list_matches),
    "matches.subscribe": Method(subscribe, websocket_only=True),
    "matches.unsubscribe": Method(unsubscribe, websocket_only=True),
}
