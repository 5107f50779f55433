"""The service's methods, written once for every transport.

Each method takes its validated-later params and the authenticated caller and returns
a result object, or raises RpcError. `dispatch.py` finds them in METHODS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sportsproxy.sandbox import matches, tokens
from sportsproxy.sandbox.caller import Caller
from sportsproxy.sandbox.errors import FORBIDDEN, RpcError
from sportsproxy.sandbox.params import bounded_int, only_keys, optional_string, string_choices

TTL_MIN, TTL_MAX, TTL_DEFAULT = 60, 86400, 600
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20


def auth_acknowledgement(caller: Caller) -> dict[str, Any]:
    """The `auth` result: what the credential is good for."""
    return {
        "ok": True,
        "expiresAt": caller.expires_at.isoformat() if caller.expires_at else None,
        "tier": caller.tier,
        "env": caller.env,
    }


def create_token(params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
    if caller.kind != "api_key":
        raise RpcError(FORBIDDEN, "Tokens cannot mint tokens: call tokens.create with an API key from your backend.")
    only_keys(params, {"ttl"})
    ttl = bounded_int(params, "ttl", low=TTL_MIN, high=TTL_MAX, default=TTL_DEFAULT)
    return tokens.mint(caller, ttl).as_json()


def list_matches(params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
    only_keys(params, {"sports", "limit", "cursor"})
    page = matches.list_matches(
        caller.env,
        sports=string_choices(params, "sports", matches.SPORTS),
        limit=bounded_int(params, "limit", low=LIMIT_MIN, high=LIMIT_MAX, default=LIMIT_DEFAULT),
        cursor=optional_string(params, "cursor"),
    )
    return page.as_json()


Handler = Callable[[Mapping[str, Any], Caller], dict[str, Any]]


@dataclass(frozen=True)
class Method:
    handler: Handler
    websocket_only: bool = False


METHODS: dict[str, Method] = {
    "tokens.create": Method(create_token),
    "matches.list": Method(list_matches),
}
