"""One throttle for every login form of the site (`/accounts/login/` and the admin's): 10 failed
attempts per minute per client IP across all of them, then 429 until the minute ends, without
checking the password. Copy this pattern for your own site's login forms.

`throttled(view)` wraps any login view (Django's LoginView, `admin.site.login`), as django-axes
does, so every form counts in the same count as the mint route's HTTP Basic or Digest
(mintroute.password_throttle: the counters, in the Django cache, keyed on the route's client-IP
rule). Every attempt is counted before its password is checked; a successful login (Django's
`user_logged_in` during a counted attempt) is given back, and so is an attempt whose password was never
checked because a store the form reads could not be reached (a database failover): a user who tried
during one is not locked out for the rest of the minute after it.
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

from config.unavailable import STORE_ERRORS
from mintroute import password_throttle

logger = logging.getLogger(__name__)

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
            wait = password_throttle.attempt(request)
        except Exception:
            logger.exception("Login throttle store unreachable; refusing logins until it is back")
            message = "Logging in is unavailable (the throttle's store cannot be reached). Try again shortly."
            return _refused(view, request, message, status=503, wait=STORE_RETRY_SECONDS, args=args, kwargs=kwargs)
        if wait is not None:
            message = f"Too many failed logins from your address. Try again in {wait} s."
            return _refused(view, request, message, status=429, wait=wait, args=args, kwargs=kwargs)
        setattr(request, COUNTED, True)
        try:
            return view(request, *args, **kwargs)
        except STORE_ERRORS:
            _give_back(request)  # not a failed attempt: no password was checked (fails_politely answers 503)
            raise

    return throttled_view


@receiver(user_logged_in, dispatch_uid="config.login.give_back")
def _give_back_a_success(sender: Any, request: HttpRequest | None, **kwargs: Any) -> None:
    """A counted attempt that logged in did not fail: count it as a success."""
    if request is not None:
        _give_back(request)


def _give_back(request: HttpRequest) -> None:
    """Count the request's attempt as no failure, once (a login whose store failed after it logged in
    was given back when it logged in); nothing for an attempt no throttled form counted (a test client,
    a signup)."""
    if not getattr(request, COUNTED, False):
        return
    setattr(request, COUNTED, False)
    try:
        password_throttle.give_back(request)
    except Exception:
        logger.exception("Login throttle store unreachable; an attempt that did not fail stays counted")


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
