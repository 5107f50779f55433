"""The login page, throttled: 10 failed attempts per minute per client IP, then 429 until the
minute ends, without checking the password. Copy this pattern for your own site's login.

The count lives in the Django cache through django-ratelimit (share it between processes, e.g.
Redis) and keys on the mint route's client-IP rule, so proxies are handled alike. Failures are
counted as attempts minus successes: every attempt is counted before its password is checked, so
a burst of concurrent guesses cannot all slip past the check, and a successful login is given back.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django_ratelimit.core import get_usage

from mintroute.client_ip import client_ip

logger = logging.getLogger(__name__)

FAILED_LOGIN_RATE = "10/m"  # per client IP
STORE_RETRY_SECONDS = 5


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


class ThrottledLoginView(LoginView):
    """Django's LoginView behind a per-IP limit on failed attempts."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            attempts = _count(request, "attempts", increment=True)
            successes = _count(request, "successes", increment=False)
        except Exception:
            logger.exception("Login throttle store unreachable; refusing logins until it is back")
            return self.refused(
                "Logging in is unavailable for a moment (the throttle's store cannot be reached). Retry shortly.",
                status=503,
                wait=STORE_RETRY_SECONDS,
            )
        if attempts["count"] - successes["count"] > attempts["limit"]:
            wait = max(1, int(attempts["time_left"]) + 1)  # the window still holds at its last second
            return self.refused(
                f"Too many failed logins from your address. Try again in {wait} s.", status=429, wait=wait
            )
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        try:
            _count(self.request, "successes", increment=True)  # this attempt did not fail
        except Exception:
            logger.exception("Login throttle store unreachable; a successful login stays counted")
        return super().form_valid(form)

    def refused(self, message: str, *, status: int, wait: int) -> HttpResponse:
        """The login page again, unbound and with `message`; the password was not looked at."""
        context = self.get_context_data(form=self.get_form_class()(self.request), refusal=message)
        response = self.render_to_response(context, status=status)
        response["Retry-After"] = str(wait)
        return response
