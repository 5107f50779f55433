"""The route's rules before any upstream call, written once for both entries of the view.

In order: the method, authentication (a password sent by HTTP Basic or Digest first passes the
site's login throttle, mintroute.password_throttle; then the SPORTS_TOKEN_AUTHENTICATION classes,
then CSRF unless the caller authenticated from an Authorization header a browser does not send by
itself), the permission hook, the rate limit (in "site" mode its per-IP part only for a request that
reaches the single flight), the body (optional JSON `{"reason": ...}`, small, and an object or
nothing: its parser is here too); then the token this login may reuse. They read sessions, the
cache and the site's hook, all synchronous: the WSGI entry calls `admit` directly, the ASGI entry
in one hop to Django's sync thread.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.sessions.backends.cache import SessionStore as CacheSessionStore
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.http import HttpRequest
from rest_framework import authentication, exceptions
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from mintroute import conf, password_throttle
from mintroute.errors import RouteError, authentication_unavailable, misconfigured
from mintroute.ratelimits import PER_IP, PER_USER, enforce_rate_limit
from mintroute.reuse import login_of, reusable_token
from mintroute.sharing import current_token, token_key

logger = logging.getLogger(__name__)

REASONS = ("initial", "refresh", "reconnect", "unauthorized")
MAX_BODY_BYTES = 1024
OVERSIZE_BODY = f"The body is larger than {MAX_BODY_BYTES} bytes."


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
        authenticators = [authentication() for authentication in conf.authentication_apps()]
        api_request = Request(request, parsers=[TokenRequestParser()], authenticators=authenticators)
        credential = _authenticate(api_request, authenticators[0])
        _allow(request)
        shared = conf.token_sharing() == "site"
        # Before anything reaches upstream. In "site" mode the per-IP limit counts only the requests
        # that reach the single flight (below): an answer with the site's token costs no quota, and
        # many users behind one address all read it. The site's token is read with the count (one round
        # trip to Redis on mintroute.redis_cache's cache).
        if shared:
            read = enforce_rate_limit(request, per=(PER_USER,), reading=(token_key(),))
        else:
            read = enforce_rate_limit(request, per=(PER_USER, PER_IP))
        reason = reason_of(_body(api_request))
        ttl = conf.token_ttl()
        site_token = current_token(reason, read) if shared else None
        if shared and site_token is None:
            enforce_rate_limit(request, per=(PER_IP,))
    except ImproperlyConfigured as error:
        raise misconfigured(error) from None
    login = login_of(request, credential)
    if shared:
        return Admission(ttl=ttl, login=login, reusable=site_token, reason=reason, shared=True)
    reusable = None if reason == "unauthorized" else reusable_token(request, login)
    return Admission(ttl=ttl, login=login, reusable=reusable, reason=reason)


def _authenticate(api_request: Request, first: Any) -> object:
    """Run the authentication classes (DRF's rules), then the CSRF rule; returns `request.auth`
    (None when the session authenticated).

    A password in the Authorization header (Basic, Digest) is an attempt of the site's login
    throttle: counted before any class checks it, refused 429 `rate_limited` past the limit, and
    given back unless a class refused it (`_password_attempt`).

    A class may refuse with DRF's AuthenticationFailed or NotAuthenticated (401). Anything else it
    raises, a database or session store it reads being unreachable included, is 503
    `authentication_unavailable`, logged with its traceback: never a 500.
    """
    try:
        _probe_session_store(api_request)
        with _password_attempt(api_request):
            user: Any = api_request.user
        from_an_app = _sent_by_an_app(api_request)
        if user and user.is_authenticated and not from_an_app and not _checked_csrf(api_request):
            _enforce_csrf(api_request)
    except RouteError:
        raise  # the login throttle's refusal
    except (exceptions.ParseError, exceptions.UnsupportedMediaType, RequestDataTooBig) as error:
        raise _bad_body(error) from None  # the CSRF check reads the body (request.POST) of a form post
    except exceptions.PermissionDenied:  # the only refusal authentication raises besides 401: CSRF
        raise RouteError(
            403,
            "csrf_failed",
            "CSRF token missing or wrong: send the page's CSRF token in the X-CSRFToken header.",
        ) from None
    except (exceptions.AuthenticationFailed, exceptions.NotAuthenticated):
        raise _not_authenticated(api_request, first) from None
    except Exception:
        logger.exception("An authentication class of SPORTS_TOKEN_AUTHENTICATION failed; answering 503")
        raise authentication_unavailable() from None
    if not user or not user.is_authenticated:
        raise _not_authenticated(api_request, first)
    return api_request.auth


def _probe_session_store(api_request: Request) -> None:
    """Raise when the cache that holds sessions cannot be read. Django's cache session backend takes
    an unreachable cache for "no session" (the caller would look logged out, and the answer would
    delete their session cookie); the route answers 503 instead and keeps the cookie."""
    session = getattr(api_request, "session", None)  # DRF passes it through from the Django request
    if not isinstance(session, CacheSessionStore) or not session.session_key:
        return
    if any(isinstance(each, authentication.SessionAuthentication) for each in api_request.authenticators or ()):
        caches[settings.SESSION_CACHE_ALIAS].get(session.cache_key)


# Authorization schemes that carry a password (or a proof of one) for the route to check.
PASSWORD_SCHEMES = frozenset({"basic", "digest"})


@contextmanager
def _password_attempt(api_request: Request) -> Iterator[None]:
    """Around the classes' check of the request's credentials: when they include a password (Basic,
    Digest), one attempt of the site's login throttle, counted first (RouteError 429 past the limit:
    nothing is checked), and given back unless a class refused the password (AuthenticationFailed).
    A password no class reads, or one that authenticates, is no failure."""
    if _scheme(api_request.META.get("HTTP_AUTHORIZATION", "")) not in PASSWORD_SCHEMES:
        yield
        return
    _count_password_attempt(api_request)
    refused = False
    try:
        yield
    except exceptions.AuthenticationFailed:
        refused = True
        raise
    finally:
        if not refused:
            _give_back_password_attempt(api_request)


def _count_password_attempt(api_request: Request) -> None:
    """The login throttle's attempt for the password this request presents; RouteError when refused."""
    try:
        wait = password_throttle.attempt(api_request._request)
    except Exception:
        logger.exception("Login throttle store unreachable; refusing passwords until it is back")
        raise authentication_unavailable() from None
    if wait is not None:
        raise RouteError(
            429,
            "rate_limited",
            f"Too many failed logins from your address. Retry in {wait} s.",
            {"Retry-After": str(wait)},
        )


def _give_back_password_attempt(api_request: Request) -> None:
    try:
        password_throttle.give_back(api_request._request)
    except Exception:
        logger.exception("Login throttle store unreachable; a successful password stays counted")


# Authorization schemes a browser sends by itself (cached, or negotiated with the OS): credentials
# in them ride along with a forged cross-site form exactly as a session cookie does.
BROWSER_SCHEMES = frozenset({"basic", "digest", "negotiate"})
# Classes that read what a browser or the web server supplies, whatever the Authorization header says.
AMBIENT_CLASSES = (authentication.SessionAuthentication, authentication.RemoteUserAuthentication)


def _sent_by_an_app(api_request: Request) -> bool:
    """True when the class that authenticated read an Authorization header whose scheme a browser
    never sends by itself (DRF's `Token`, simplejwt's `Bearer`): only such a request skips CSRF."""
    authenticator = api_request.successful_authenticator
    if authenticator is None or isinstance(authenticator, AMBIENT_CLASSES):
        return False
    scheme = _scheme(api_request.META.get("HTTP_AUTHORIZATION", ""))
    if not scheme or scheme in BROWSER_SCHEMES:
        return False
    challenge = _scheme(getattr(authenticator, "authenticate_header", lambda request: "")(api_request) or "")
    return not challenge or challenge == scheme  # the class that announces a scheme read that header


def _scheme(header: str) -> str:
    """The header's scheme as DRF reads it: its first word, split on any white space, in lower case."""
    words = header.encode("latin-1", errors="replace").split()  # DRF splits the header's bytes
    return words[0].decode("latin-1").lower() if words else ""


def _checked_csrf(api_request: Request) -> bool:
    """True when the class that authenticated was DRF's session authentication as DRF wrote it (the
    route's default, `mintroute.authentication.SessionAuthentication`, included): its `authenticate`
    has just enforced the same CSRF check."""
    authenticator = type(api_request.successful_authenticator)
    session = authentication.SessionAuthentication
    return (
        issubclass(authenticator, session)
        and authenticator.authenticate is session.authenticate
        and authenticator.enforce_csrf is session.enforce_csrf
    )


def _enforce_csrf(api_request: Request) -> None:
    """Django's CSRF check as DRF's session authentication runs it (PermissionDenied when it fails)."""
    authentication.SessionAuthentication().enforce_csrf(api_request)


def _not_authenticated(api_request: Request, first: Any) -> RouteError:
    """401 with the challenge of the first listed class (DRF's rule), never a redirect. A site whose
    first class is not the session's serves apps: the message never tells them to log in."""
    try:
        challenge = first.authenticate_header(api_request)
    except Exception:
        logger.exception("The first class of SPORTS_TOKEN_AUTHENTICATION could not give its challenge")
        challenge = None
    if isinstance(first, authentication.SessionAuthentication):
        message = "Log in first: this route mints tokens for authenticated users only."
    else:
        message = "The credential was missing or not accepted: this route mints tokens for authenticated callers only."
    return RouteError(401, "not_authenticated", message, {"WWW-Authenticate": challenge} if challenge else None)


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
        return RouteError(400, "bad_request", OVERSIZE_BODY)
    if isinstance(error, exceptions.UnsupportedMediaType):
        return RouteError(400, "bad_request", "Send the body as JSON (Content-Type: application/json).")
    detail = error.detail if isinstance(error, exceptions.APIException) else error
    return RouteError(400, "bad_request", str(detail))


# --- the body -------------------------------------------------------------------------------------
class TokenRequestParser(JSONParser):
    """JSON, read no further than MAX_BODY_BYTES (DRF's own parser reads any size)."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        raw = stream.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            raise exceptions.ParseError(OVERSIZE_BODY)
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise exceptions.ParseError("The body is not valid JSON.") from None


def reason_of(data: Any) -> str | None:
    """The optional `reason` member; 400 `bad_request` unless the body is a JSON object."""
    if not isinstance(data, dict):
        raise RouteError(400, "bad_request", 'The body must be a JSON object such as {"reason": "refresh"}.')
    reason = data.get("reason")
    if reason is not None and reason not in REASONS:
        raise RouteError(400, "bad_request", f"reason must be one of: {', '.join(REASONS)}.")
    return reason
