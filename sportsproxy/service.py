"""What the service's documentation fixes, written once, and the rules that follow from it.

The SDK, its Django glue and the site read these facts from here, and so does the embedded sandbox
(`sportsproxy.sandbox`), which stands for the service: one copy in Python. The browser client
keeps its own (`mintroute/static/sports/constants.js`); tests/test_service_facts.py holds it and
every other copy equal to this module.

The rules (`validate_ttl`, `api_key_problem`, `origin_problem`) are shared on purpose: the SDK
client, the Django glue's checks and the mint route's settings refuse a value with their words. So
is the SDK's retry policy, which bounds how long one call can take (`longest_call_seconds`): the
mint route's single flight holds its lock that long.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

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


# --- the rules on what the service takes, each sentence written once ----------------------------


def validate_ttl(ttl: int) -> int:
    """`ttl` as the service accepts it; ValueError naming the bound otherwise."""
    if type(ttl) is not int or not TTL_MIN <= ttl <= TTL_MAX:
        raise ValueError(f"ttl must be an integer from {TTL_MIN} to {TTL_MAX} seconds; got {ttl!r}.")
    return ttl


def api_key_problem(key: str) -> str | None:
    """What is wrong with a non-empty `key`, as the end of a sentence that starts with the setting's or
    argument's name ("SPORTS_API_KEY is malformed: ..."), or None. Never quotes the key."""
    return None if API_KEY_PATTERN.match(key) else f"is malformed: a key is {API_KEY_FORMAT}"


def origin_problem(url: str) -> str | None:
    """An origin is `http(s)://host[:port]`, an optional trailing slash, and nothing else (not even
    white space). What keeps `url` from being one, as the end of a sentence that starts with the setting's
    name ("... is not an origin: it has a path ..."), or None. Quotes no part of the URL but its scheme
    (a path or user info may hold a secret)."""
    return None if (reason := _not_an_origin_because(url)) is None else f"{ORIGIN_RULE}: {reason}"


MAX_PORT = 65535
ORIGIN_RULE = "is not the service's origin, http(s)://host[:port]"


def _not_an_origin_because(url: str) -> str | None:
    if any(character.isspace() for character in url):
        return "it contains white space (a stray space, tab or newline?)"  # urlsplit would drop tabs and newlines
    if not url.isascii() or not url.isprintable():
        return "it contains characters that are not printable ASCII"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "it does not parse as a URL"
    if "://" not in url or not parts.scheme:
        return "it has no scheme (start it with https:// or http://)"
    if parts.scheme not in ("http", "https"):
        return f"its scheme is {parts.scheme!r}, not http or https"
    if "@" in parts.netloc:
        return "it has user info (a name or password before @; the SDK authenticates with the API key)"
    if not parts.hostname:
        return "it has no host"
    after_host = parts.netloc.rpartition("]")[2]  # an IPv6 host's colons are inside [ ]
    port = after_host.rpartition(":")[2]
    if ":" in after_host and not (port.isdigit() and 1 <= int(port) <= MAX_PORT):
        return f"its port is not a number from 1 to {MAX_PORT}"
    if parts.path not in ("", "/"):
        return "it has a path (remove everything from the / after the host)"
    if "?" in url:
        return "it has a query (remove everything from the ?)"
    if "#" in url:
        return "it has a fragment (remove everything from the #)"
    return None


# The SDK's retries: only failures to connect (the request cannot have reached the service), with
# full-jitter backoff capped at RETRY_MAX_DELAY.
DEFAULT_MAX_RETRIES = 2
RETRY_BASE_DELAY = 0.25
RETRY_MAX_DELAY = 4.0


def longest_call_seconds(timeout: float, max_retries: int = DEFAULT_MAX_RETRIES) -> float:
    """The longest one SDK call can take with `timeout` per attempt: every attempt timing out,
    with the longest backoff between them."""
    return (1 + max_retries) * timeout + max_retries * RETRY_MAX_DELAY
