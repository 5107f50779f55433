"""One count of failed password attempts per client IP, for every way the site takes a password: its
login forms (config/login.py wraps them) and HTTP Basic or Digest at the mint route (mintroute.admission).
10 failures a minute across all of them; then every attempt is refused until the minute ends, before
its password is checked.

The counts live in the Django cache through django-ratelimit (share it between processes, e.g. Redis)
and key on the route's client-IP rule (`client_ip`). Failures are counted as attempts minus successes:
every attempt is counted before its password is checked, so a burst of concurrent guesses cannot all
slip past the check, and an attempt that succeeds is given back.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django_ratelimit.core import get_usage

from mintroute import metrics
from mintroute.ratelimits import client_ip

FAILED_LOGIN_RATE = "10/m"  # per client IP, across every way to present a password


def attempt(request: HttpRequest) -> int | None:
    """Count one attempt, before its password is checked: None when it may go on, else the seconds until
    this client IP may try again. Raises when the store gives no answer (refuse the attempt then)."""
    attempts = _count(request, "attempts", increment=True)
    successes = _count(request, "successes", increment=False)
    if attempts["count"] - successes["count"] <= attempts["limit"]:
        return None
    metrics.count_login_throttled()
    return max(1, int(attempts["time_left"]) + 1)  # the window still holds at its last second


def give_back(request: HttpRequest) -> None:
    """A counted attempt that succeeded did not fail. Raises when the store gives no answer."""
    _count(request, "successes", increment=True)


def _ip_key(group: str, request: HttpRequest) -> str:
    return client_ip(request)


def _count(request: HttpRequest, counted: str, *, increment: bool) -> dict[str, Any]:
    """django-ratelimit's usage of one counter; raises when its store gives no answer."""
    usage: dict[str, Any] | None = get_usage(
        request, group=f"login:{counted}", key=_ip_key, rate=FAILED_LOGIN_RATE, increment=increment
    )
    if usage is None:  # RATELIMIT_ENABLE = False: nothing is counted
        return {"count": 0, "limit": 1, "time_left": 0}
    if usage["limit"] == 0 and usage["time_left"] == -1:  # django-ratelimit's "cache failed" answer
        raise ConnectionError("the rate-limit store gave no count")
    return usage
