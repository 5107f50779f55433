"""The sandbox's settings: one reader per setting, read at call time (so tests can override them),
each returning the checked value or raising SettingsError with the setting's `Problem` (the glue's
idiom, sportsproxy/django/conf.py); `problems()` is what `manage.py check` reports (checks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

from sportsproxy import service
from sportsproxy.django.problems import Problem, SettingsError, problems_of

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
    return rate_classes()[name]


def rate_classes() -> dict[str, RateClass]:
    """Every tier's limits, SPORTS_SANDBOX_RATE_CLASSES's overrides applied: tiers and limits it names
    must exist, and each limit is a whole number, 0 or more (0: none allowed)."""
    overrides = getattr(settings, "SPORTS_SANDBOX_RATE_CLASSES", {})
    limits = set(RateClass.__dataclass_fields__)
    if not isinstance(overrides, dict) or not all(
        tier in DEFAULT_RATE_CLASSES
        and isinstance(changes, dict)
        and set(changes) <= limits
        and all(type(value) is int and value >= 0 for value in changes.values())
        for tier, changes in overrides.items()
    ):
        raise SettingsError(RATE_CLASSES)
    return {
        tier: RateClass(**{**base.__dict__, **overrides.get(tier, {})}) for tier, base in DEFAULT_RATE_CLASSES.items()
    }


RATE_CLASSES = Problem(
    "sandbox.E004",
    "SPORTS_SANDBOX_RATE_CLASSES",
    "SPORTS_SANDBOX_RATE_CLASSES must map tiers (" + ", ".join(TIERS) + ") to limits "
    "(requests_per_minute, subscriptions, connections), each a whole number, 0 or more.",
    'For example {"free": {"requests_per_minute": 10}}; remove the setting for the documented limits.',
)


def _seconds(raw: object, setting: str, default: float, *, zero_allowed: bool = False) -> float:
    """`raw` as a finite number of seconds (above 0, or at least 0); SettingsError (sandbox.E003) otherwise."""
    try:
        value = math.nan if isinstance(raw, bool) else float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        bound = "0 or more" if zero_allowed else "above 0"
        raise SettingsError(
            Problem(
                "sandbox.E003",
                setting,
                f"{setting} must be a number of seconds {bound}; got {raw!r}.",
                f"Remove it for the default ({default:g} s).",
            )
        )
    return value


def signing_key() -> str:
    key: str = settings.SPORTS_SANDBOX_SIGNING_KEY
    return key


def jwt_issuer() -> str:
    return str(getattr(settings, "SPORTS_SANDBOX_JWT_ISSUER", "sports-sandbox"))


def jwt_audience() -> str:
    return str(getattr(settings, "SPORTS_SANDBOX_JWT_AUDIENCE", "sports-sdk"))


def jwt_leeway() -> int:
    """Seconds a token's `iat`/`nbf` may lie in the future (clock skew between hosts)."""
    raw = getattr(settings, "SPORTS_SANDBOX_JWT_LEEWAY", 5)
    return int(_seconds(raw, "SPORTS_SANDBOX_JWT_LEEWAY", 5, zero_allowed=True))


def last_used_interval() -> int:
    """At most one `last_used_at` write per key per this many seconds."""
    raw = getattr(settings, "SPORTS_SANDBOX_LAST_USED_INTERVAL", 60)
    return int(_seconds(raw, "SPORTS_SANDBOX_LAST_USED_INTERVAL", 60, zero_allowed=True))


def slot_heartbeat() -> float:
    """Seconds per bucket of the connection and subscription counts (see accounts/slots.py)."""
    return _seconds(getattr(settings, "SPORTS_SANDBOX_SLOT_HEARTBEAT", 10), "SPORTS_SANDBOX_SLOT_HEARTBEAT", 10)


def ws_tick() -> float:
    """The longest the per-process timers sleep at once (a moved sandbox clock is noticed within it)."""
    return _seconds(getattr(settings, "SPORTS_SANDBOX_WS_TICK", 0.5), "SPORTS_SANDBOX_WS_TICK", 0.5)


def ws_auth_timeout() -> float:
    """Seconds a new socket has to send its `auth` frame."""
    raw = getattr(settings, "SPORTS_SANDBOX_WS_AUTH_TIMEOUT", 10)
    return _seconds(raw, "SPORTS_SANDBOX_WS_AUTH_TIMEOUT", 10)


def ws_ping_after() -> float:
    """Seconds of silence after which a socket is sent a `ping` notification (the service's 25)."""
    raw = getattr(settings, "SPORTS_SANDBOX_WS_PING_AFTER", 25)
    return _seconds(raw, "SPORTS_SANDBOX_WS_PING_AFTER", 25)


def event_interval() -> float:
    """Seconds of (sandbox clock) time between simulated match events."""
    return _seconds(getattr(settings, "SPORTS_SANDBOX_EVENT_INTERVAL", 3), "SPORTS_SANDBOX_EVENT_INTERVAL", 3)


def publishes_events() -> bool:
    """Whether this process publishes the simulated match events (one process is enough with Redis)."""
    return bool(getattr(settings, "SPORTS_SANDBOX_EVENTS", True))


READERS = (
    rate_classes,
    jwt_leeway,
    last_used_interval,
    slot_heartbeat,
    ws_tick,
    ws_auth_timeout,
    ws_ping_after,
    event_interval,
)


def problems() -> list[Problem]:
    """Every wrong sandbox setting, in the order of READERS."""
    return problems_of(READERS)
