"""What the service's documentation fixes, written once.

The SDK, its Django glue and the demo read these facts from here, and so does the embedded sandbox
(`sportsproxy.sandbox`), which stands for the service: one copy in Python. The browser client
keeps its own (`mintroute/static/sports/constants.js`); tests/test_service_facts.py holds it and
every other copy equal to this module.
"""

from __future__ import annotations

import re

RPC_PATH = "/sdk/v1/rpc"
WS_PATH = "/sdk/v1/ws"

TTL_MIN, TTL_MAX, TTL_DEFAULT = 60, 86400, 600  # seconds a minted token lives

API_KEY_PATTERN = re.compile(r"^sk_(live|test)_[A-Za-z0-9_-]{32,}$")
API_KEY_FORMAT = "sk_live_ or sk_test_ followed by at least 32 url-safe characters"

SPORTS = ("football", "basketball", "tennis", "ice-hockey", "baseball", "esports")

# The JSON-RPC error codes the service answers (`error.code`).
PARSE_ERROR = "parse_error"
INVALID_REQUEST = "invalid_request"
METHOD_NOT_FOUND = "method_not_found"
INVALID_PARAMS = "invalid_params"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
RATE_LIMITED = "rate_limited"
INTERNAL_ERROR = "internal_error"
ERROR_CODES = (
    PARSE_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    INVALID_PARAMS,
    UNAUTHORIZED,
    FORBIDDEN,
    RATE_LIMITED,
    INTERNAL_ERROR,
)

# The WebSocket close codes the service sends (docs/service.md, "Close codes").
CLOSE_UNAUTHORIZED = 4401  # no valid `auth`, or the credential expired or was revoked
CLOSE_RATE_LIMITED = 4429  # the first `auth` was refused as `rate_limited`
CLOSE_BACKLOG = 4008  # the client stopped reading

# The notifications the service sends on a socket (frames with a method and no id).
MATCH_EVENT = "matches.event"
AUTH_EXPIRED = "auth.expired"
AUTH_REVOKED = "auth.revoked"
