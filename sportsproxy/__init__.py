"""The sports-data service from the integrator's side.

    sportsproxy/            the SDK core: client, errors, responses, the service's facts, the request id
                            it sends (request_id.py); no Django
    sportsproxy/realtime    the SDK's WebSocket, imported only when a socket is opened (extra `realtime`)
    sportsproxy/django/     the Django glue: settings, the shared client, system checks
    sportsproxy/sandbox/    the embedded stand-in for the service, a Django app (extra `sandbox`)

Importing this package loads the SDK core only.
"""

from __future__ import annotations

import importlib
import typing

from sportsproxy.client import AsyncSportsClient, SportsClient
from sportsproxy.errors import (
    ForbiddenError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    RateLimitedError,
    ServiceInternalError,
    SportsAPIError,
    SportsError,
    SportsProtocolError,
    SportsTimeout,
    SportsTransportError,
    SportsUnavailable,
    UnauthorizedError,
)
from sportsproxy.responses import Match, MatchPage, TokenResponse

if typing.TYPE_CHECKING:
    from sportsproxy.realtime import SportsSocket

__all__ = [
    "AsyncSportsClient",
    "ForbiddenError",
    "InvalidParamsError",
    "InvalidRequestError",
    "Match",
    "MatchPage",
    "MethodNotFoundError",
    "RateLimitedError",
    "ServiceInternalError",
    "SportsAPIError",
    "SportsClient",
    "SportsError",
    "SportsProtocolError",
    "SportsSocket",
    "SportsTimeout",
    "SportsTransportError",
    "SportsUnavailable",
    "TokenResponse",
    "UnauthorizedError",
]

_LAZY = {"SportsSocket": "sportsproxy.realtime"}  # needs websockets: loaded on first use only


def __getattr__(name: str) -> typing.Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sportsproxy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
