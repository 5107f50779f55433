"""The sandbox's settings, read at call time so tests can override them."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from sportsproxy import service

# The service's own facts; those the SDK needs too are written once, in sportsproxy.service.
TIERS = ("free", "starter", "growth", "business")
ENVIRONMENTS = ("live", "test")
TTL_MIN, TTL_MAX, TTL_DEFAULT = service.TTL_MIN, service.TTL_MAX, service.TTL_DEFAULT  # seconds a token may live


@dataclass(frozen=True)
class RateClass:
    requests_per_minute: int
    subscriptions: int
    connections: int


DEFAULT_RATE_CLASSES = {
    "free": RateClass(requests_per_minute=60, subscriptions=5, connections=2),
    "starter": RateClass(requests_per_minute=300, subscriptions=20, connections=5),
    "growth": RateClass(requests_per_minute=1200, subscriptions=100, connections=20),
    "business": RateClass(requests_per_minute=6000, subscriptions=500, connections=100),
}

JWT_ALGORITHM = "HS256"  # pinned in code: never taken from a token's header
MAX_BODY_BYTES = 64 * 1024


def rate_class(name: str) -> RateClass:
    """The limits of a rate-limit class; SPORTS_SANDBOX_RATE_CLASSES overrides any of them."""
    overrides: dict[str, dict[str, int]] = getattr(settings, "SPORTS_SANDBOX_RATE_CLASSES", {})
    base = DEFAULT_RATE_CLASSES[name]
    return RateClass(**{**base.__dict__, **overrides.get(name, {})})


def signing_key() -> str:
    key: str = settings.SPORTS_SANDBOX_SIGNING_KEY
    return key


def jwt_issuer() -> str:
    return str(getattr(settings, "SPORTS_SANDBOX_JWT_ISSUER", "sports-sandbox"))


def jwt_audience() -> str:
    return str(getattr(settings, "SPORTS_SANDBOX_JWT_AUDIENCE", "sports-sdk"))


def jwt_leeway() -> int:
    """Seconds a token's `iat`/`nbf` may lie in the future (clock skew between hosts)."""
    return int(getattr(settings, "SPORTS_SANDBOX_JWT_LEEWAY", 5))


def last_used_interval() -> int:
    """At most one `last_used_at` write per key per this many seconds."""
    return int(getattr(settings, "SPORTS_SANDBOX_LAST_USED_INTERVAL", 60))


def slot_heartbeat() -> float:
    """Seconds per bucket of the connection and subscription counts (see accounts/slots.py)."""
    return float(getattr(settings, "SPORTS_SANDBOX_SLOT_HEARTBEAT", 10))


def ws_tick() -> float:
    """The longest the per-process timers sleep at once (a moved sandbox clock is noticed within it)."""
    return float(getattr(settings, "SPORTS_SANDBOX_WS_TICK", 0.5))


def ws_auth_timeout() -> float:
    """Seconds a new socket has to send its `auth` frame."""
    return float(getattr(settings, "SPORTS_SANDBOX_WS_AUTH_TIMEOUT", 10))


def event_interval() -> float:
    """Seconds of (sandbox clock) time between simulated match events."""
    return float(getattr(settings, "SPORTS_SANDBOX_EVENT_INTERVAL", 3))


def publishes_events() -> bool:
    """Whether this process publishes the simulated match events (one process is enough with Redis)."""
    return bool(getattr(settings, "SPORTS_SANDBOX_EVENTS", True))
