"""The route's rate limit: django-ratelimit on the Django cache, per user and per client IP.

It fails closed: if the cache cannot be reached the route answers 503 rather than mint
without a limit, because an unthrottled mint route lets a scraper spend the account's quota.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest
from django_ratelimit.core import get_usage

from mintroute import conf
from mintroute.client_ip import client_ip
from mintroute.errors import RouteError

logger = logging.getLogger(__name__)


def enforce_rate_limit(request: HttpRequest, *, group: str = "mintroute", counted: str = "token requests") -> None:
    """Count this request for its user and its IP; 429 if either is over SPORTS_TOKEN_RATE.

    Any view that spends the API key's quota on a user's behalf should call it with a `group`
    of its own (the demo's server-rendered panel does); `counted` names what the 429 counts.
    """
    rate = conf.token_rate()
    # Read before the store is touched, so a wrong setting is not mistaken for a store failure.
    scopes = {"user": str(request.user.pk), "client IP": client_ip(request)}
    waits: dict[str, int] = {}
    for scope, value in scopes.items():
        try:
            usage = get_usage(request, group=f"{group}:{scope}", key=_constant(value), rate=rate, increment=True)
        except Exception:
            logger.exception("Rate-limit store unreachable; refusing to mint without a limit")
            raise _store_unavailable() from None
        if usage is None:  # RATELIMIT_ENABLE = False
            continue
        if usage["limit"] == 0 and usage["time_left"] == -1:  # django-ratelimit's "cache failed" answer
            logger.error("Rate-limit store gave no count; refusing to mint without a limit")
            raise _store_unavailable()
        if usage["should_limit"]:
            # django-ratelimit's window still holds at its last second, hence the + 1.
            waits[scope] = max(1, int(usage["time_left"]) + 1)
    if waits:
        scope, wait = max(waits.items(), key=lambda item: item[1])
        raise RouteError(
            429,
            "rate_limited",
            f"Too many {counted} for this {scope} (limit {rate}). Retry in {wait} s.",
            {"Retry-After": str(wait)},
        )


def _constant(value: str) -> Callable[[str, HttpRequest], str]:
    return lambda group, request: value


def _store_unavailable() -> RouteError:
    return RouteError(
        503,
        "rate_limit_unavailable",
        "The rate-limit store (the Django cache) is unreachable, so nothing is sent upstream. Retry shortly.",
        {"Retry-After": "5"},
    )
