"""The route's rules before any upstream call, written once for both entries of the view.

In order: the method, authentication (the SPORTS_TOKEN_AUTHENTICATION classes; CSRF when the
session authenticates), the permission hook, the rate limit, the body; then the token this login
may reuse. They read sessions, the cache and the site's hook, all synchronous: the WSGI entry
calls `admit` directly, the ASGI entry in one hop to Django's sync thread.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.request import Request

from mintroute import conf
from mintroute.body import MAX_BODY_BYTES, TokenRequestParser, reason_of
from mintroute.errors import RouteError
from mintroute.minting import misconfigured
from mintroute.ratelimits import enforce_rate_limit
from mintroute.reuse import login_of, reusable_token
from mintroute.sharing import current_token

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admission:
    """A request the route will answer with a token: `reusable` when no mint is needed."""

    ttl: int
    login: str  # the digest that binds a remembered token to this login (mintroute.reuse)
    reusable: dict[str, str] | None
    reason: str | None = None  # the body's reason
    shared: bool = False  # SPORTS_TOKEN_SHARING is "site": the site's one token (mintroute.sharing)


def admit(request: HttpRequest) -> Admission:
    """Every rule before the mint; RouteError with the row's answer when one refuses."""
    if request.method != "POST":
        raise RouteError(405, "method_not_allowed", "Use POST to get a token.", {"Allow": "POST"})
    try:
        authenticators = [authentication() for authentication in conf.authentication_classes()]
        api_request = Request(request, parsers=[TokenRequestParser()], authenticators=authenticators)
        credential = _authenticate(api_request, authenticators[0])
        _allow(request)
        enforce_rate_limit(request)  # before anything reaches upstream
        reason = reason_of(_body(api_request))
        ttl = conf.token_ttl()
        shared = conf.token_sharing() == "site"
    except ImproperlyConfigured as error:
        raise misconfigured(error) from None
    login = login_of(request, credential)
    if shared:
        return Admission(ttl=ttl, login=login, reusable=current_token(reason), reason=reason, shared=True)
    reusable = None if reason == "unauthorized" else reusable_token(request, login)
    return Admission(ttl=ttl, login=login, reusable=reusable, reason=reason)


def _authenticate(api_request: Request, first: Any) -> object:
    """Run the authentication classes (DRF's rules); returns `request.auth`, None for the session."""
    try:
        user: Any = api_request.user
    except (exceptions.ParseError, exceptions.UnsupportedMediaType, RequestDataTooBig) as error:
        raise _bad_body(error) from None  # the CSRF check reads the body (request.POST) of a session call
    except exceptions.PermissionDenied:  # the only refusal authentication raises besides 401: CSRF
        raise RouteError(
            403,
            "csrf_failed",
            "CSRF token missing or wrong: send the page's CSRF token in the X-CSRFToken header.",
        ) from None
    except exceptions.APIException:
        raise _not_authenticated(api_request, first) from None
    if not user or not user.is_authenticated:
        raise _not_authenticated(api_request, first)
    return api_request.auth


def _not_authenticated(api_request: Request, first: Any) -> RouteError:
    """401 with the challenge of the first listed class (DRF's rule), never a redirect."""
    challenge = first.authenticate_header(api_request)
    return RouteError(
        401,
        "not_authenticated",
        "Log in first: this route mints tokens for authenticated users only.",
        {"WWW-Authenticate": challenge} if challenge else None,
    )


def _allow(request: HttpRequest) -> None:
    """The SPORTS_TOKEN_PERMISSION hook decides; a hook that raises, or cannot be loaded, refuses.

    An `async def` hook is awaited (an ASGI site's natural choice); its coroutine is never taken for yes.
    """
    try:
        decision = conf.permission()(request)
        if inspect.isawaitable(decision):
            decision = async_to_sync(_settle)(decision)
        allowed = bool(decision)
    except Exception:
        logger.exception("SPORTS_TOKEN_PERMISSION failed; refusing the token")
        allowed = False
    if not allowed:
        raise RouteError(403, "forbidden", "This account is not allowed to get sports tokens.")


async def _settle(decision: Awaitable[Any]) -> Any:
    return await decision


def _body(api_request: Request) -> Any:
    try:
        return api_request.data
    except (exceptions.ParseError, exceptions.UnsupportedMediaType, RequestDataTooBig) as error:
        raise _bad_body(error) from None


def _bad_body(error: Exception) -> RouteError:
    if isinstance(error, RequestDataTooBig):  # past DATA_UPLOAD_MAX_MEMORY_SIZE: Django refuses to read it
        return RouteError(400, "bad_request", f"The body is larger than {MAX_BODY_BYTES} bytes.")
    if isinstance(error, exceptions.UnsupportedMediaType):
        return RouteError(400, "bad_request", "Send the body as JSON (Content-Type: application/json).")
    detail = error.detail if isinstance(error, exceptions.APIException) else error
    return RouteError(400, "bad_request", str(detail))
