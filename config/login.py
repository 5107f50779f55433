"""One throttle for every login form of the site (`/accounts/login/` and the admin's): 10 failed
attempts per minute per client IP across all of them, then 429 until the minute ends, without
checking the password. Copy this pattern for your own site's login forms.

`throttled(view)` wraps any login view (Django's LoginView, `admin.site.login`), as django-axes
does, so every form counts in the same two counters. They live in the Django cache through
django-ratelimit (share it between processes, e.g. Redis) and key on the mint route's client-IP
rule, so proxies and IPv4-mapped addresses are grouped alike. Failures are counted as attempts
minus successes: every attempt is counted before its password is checked, so a burst of concurrent
guesses cannot all slip past the check; a successful login (Django's `user_logged_in` during a
counted attempt) is given back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django_ratelimit.core import get_usage

from mintroute import metrics
from mintroute.ratelimits import client_ip

logger = logging.getLogger(__name__)

FAILED_LOGIN_RATE = "10/m"  # per client IP, across every login form
STORE_RETRY_SECONDS = 5
COUNTED = "_login_throttle_counted"  # set on a request whose attempt the throttle counted

LoginView = Callable[..., HttpResponseBase]


def throttled(view: LoginView) -> LoginView:
    """`view`, a login form's view, behind the site's one per-IP limit on failed attempts."""

    @wraps(view)
    def throttled_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        try:
            attempts = _count(request, "attempts", increment=True)
            successes = _count(request, "successes", increment=False)
        except Exception:
            logger.exception("Login throttle store unreachable; refusing logins until it is back")
            message = "Logging in is unavailable (the throttle's store cannot be reached). Try again shortly."
            return _refused(view, request, message, status=503, wait=STORE_RETRY_SECONDS, args=args, kwargs=kwargs)
        if attempts["count"] - successes["count"] > attempts["limit"]:
            wait = max(1, int(attempts["time_left"]) + 1)  # the window still holds at its last second
            message = f"Too many failed logins from your address. Try again in {wait} s."
            metrics.count_login_throttled()
            return _refused(view, request, message, status=429, wait=wait, args=args, kwargs=kwargs)
        setattr(request, COUNTED, True)
        return view(request, *args, **kwargs)

    return throttled_view


@receiver(user_logged_in, dispatch_uid="config.login.give_back")
def _give_back_a_success(sender: Any, request: HttpRequest | None, **kwargs: Any) -> None:
    """A counted attempt that logged in did not fail: count it as a success."""
    if request is None or not getattr(request, COUNTED, False):
        return  # a login no throttled form counted (a test client, a signup) gives nothing back
    try:
        _count(request, "successes", increment=True)
    except Exception:
        logger.exception("Login throttle store unreachable; a successful login stays counted")


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


def _refused(
    view: LoginView, request: HttpRequest, message: str, *, status: int, wait: int, args: Any, kwargs: Any
) -> HttpResponseBase:
    """The form's page again, unbound, with `message`: the view is asked for its page (a GET), so the
    password is not looked at. Both login templates show Django's messages."""
    messages.error(request, message)
    request.method = "GET"
    response = view(request, *args, **kwargs)
    if response.status_code == 200:  # not the admin's redirect of a staff user already logged in
        response.status_code = status
    response["Retry-After"] = str(wait)
    return response
