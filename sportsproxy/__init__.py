"""The sports-data service from the integrator's side.

The SDK (`client.py`, `errors.py`, `responses.py`) is framework-free; `conf.py`,
`shared.py`, `transport.py` and `checks.py` are its Django glue; `sandbox/` is the
embedded stand-in for the service.
"""

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
from sportsproxy.realtime import SportsSocket
from sportsproxy.responses import Match, MatchPage, TokenResponse

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
