"""Optional middleware for a site that hosts the route; add each to MIDDLEWARE by its path.

- `follow_requests`, first in MIDDLEWARE (before `route_answers_json`): each request gets an id (the
  `X-Request-ID` of a trusted proxy, else a new one; mintroute.request_ids), answered in its own
  `X-Request-ID`, sent to the service with the SDK's calls and written on every log line it causes
  (with `sportsproxy.request_id.RequestIdFilter` on the log handler); and one access line per
  request through the logger `mintroute.access` (mintroute.access_log). Outermost, it sees every
  answer, those of the middleware below included, and times the whole chain.
- `route_answers_json`, first in MIDDLEWARE (after `follow_requests`): every answer on the route's
  path is one of the route's JSON rows with `Cache-Control: no-store`, including those Django or
  another middleware would make. Before the chain: a Host not in ALLOWED_HOSTS, or a POST body
  declared over the route's limit, is 400 `bad_request` (the body is never read). After it: once
  the route's view has answered, nothing beneath can replace its answer (a session store failing in
  SessionMiddleware's save under SESSION_SAVE_EVERY_REQUEST costs no minted token: the view's
  answer is given); an error page that Django made before the view ran becomes the row for its
  status (`foreign_row`).
- `forget_token_on_logout`: logging out also deletes the remembered-token cookie from the browser.
  Without it a logged-out browser's cookie is never honoured again (the login it was bound to has
  ended, mintroute.reuse) and expires with its token; with it, the logout's own response deletes
  it, so no live token stays in a shared computer's cookie store.
- `run_chain_in_one_thread`, last in MIDDLEWARE: under ASGI, every middleware above it runs in the
  request's thread, entered once, instead of crossing from the event loop to that thread and back
  for each of its steps. Django runs a middleware built on MiddlewareMixin (sessions, CSRF,
  authentication, messages, ...) in async mode when the handler below it is async, and each of its
  process_request, process_view and process_response then hops to the request's thread and back
  (13 hops a request in this project's chain). A middleware that runs only synchronously, placed
  innermost, makes Django build the whole chain above it synchronously: one hop in, the chain as
  under WSGI, one hop back to the loop for the URL resolution and the view. The route's async entry
  still runs on the loop. Under WSGI it only calls the next handler. Measured in docs/deploy.md
  ("The route under ASGI").
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction
from django.contrib.auth.signals import user_logged_out
from django.core.exceptions import DisallowedHost
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponseBase
from django.urls import NoReverseMatch, reverse
from django.utils.decorators import sync_and_async_middleware

from mintroute import metrics
from mintroute.access_log import answered, following
from mintroute.admission import MAX_BODY_BYTES, OVERSIZE_BODY
from mintroute.errors import RouteError, authentication_unavailable
from mintroute.reuse import TOKEN_COOKIE

logger = logging.getLogger(__name__)

_LOGGED_OUT = "_mintroute_logged_out"
_VIEW_ANSWER = "_mintroute_answer"  # the route's view's own answer, kept on its request
ROUTE_NAME = "mintroute:sports-token"

View = TypeVar("View", bound=Callable[..., Any])


@receiver(user_logged_out)
def _note_logout(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    if request is not None:
        setattr(request, _LOGGED_OUT, True)


@sync_and_async_middleware
def follow_requests(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    """First in MIDDLEWARE: each request's id, its `X-Request-ID` answer header and its access line."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            with following(request) as followed:
                awaited: Awaitable[HttpResponseBase] = get_response(request)
                return answered(request, await awaited, followed)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        with following(request) as followed:
            return answered(request, get_response(request), followed)

    return middleware


@sync_and_async_middleware
def forget_token_on_logout(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    def forget(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, _LOGGED_OUT, False) and TOKEN_COOKIE in request.COOKIES:
            response.delete_cookie(TOKEN_COOKIE, samesite="Strict")
        return response

    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            awaited: Awaitable[HttpResponseBase] = get_response(request)
            return forget(request, await awaited)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return forget(request, get_response(request))

    return middleware


def run_chain_in_one_thread(
    get_response: Callable[[HttpRequest], HttpResponseBase],
) -> Callable[[HttpRequest], HttpResponseBase]:
    """A synchronous pass-through (Django takes a plain function middleware for sync-only)."""

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return get_response(request)

    return middleware


# --- route_answers_json ---------------------------------------------------------------------------
def route_view(view: View) -> View:
    """Marks `view` (sync or async) as the route's: its answer is kept on the request, so that
    route_answers_json tells it from an answer Django or a middleware made; and the time the route
    first saw the request is noted (unless route_answers_json did), for its answer's duration."""
    if iscoroutinefunction(view):

        @wraps(view)
        async def kept_async(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            metrics.start(request)
            response: HttpResponseBase = await view(request, *args, **kwargs)
            setattr(request, _VIEW_ANSWER, response)
            return response

        return kept_async  # type: ignore[return-value]

    @wraps(view)
    def kept(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        metrics.start(request)
        response: HttpResponseBase = view(request, *args, **kwargs)
        setattr(request, _VIEW_ANSWER, response)
        return response

    return kept  # type: ignore[return-value]


@sync_and_async_middleware
def route_answers_json(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    """First in MIDDLEWARE (after follow_requests): on the route's path, every answer is one of its JSON rows."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            if not _on_the_route(request):
                awaited: Awaitable[HttpResponseBase] = get_response(request)
                return await awaited
            metrics.start(request)
            refusal = _refused_before_the_chain(request)
            if refusal is not None:
                return _answer(refusal, request)
            return _the_routes_answer(request, await get_response(request))

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        if not _on_the_route(request):
            response: HttpResponseBase = get_response(request)
            return response
        metrics.start(request)
        refusal = _refused_before_the_chain(request)
        if refusal is not None:
            return _answer(refusal, request)
        return _the_routes_answer(request, get_response(request))

    return middleware


def _on_the_route(request: HttpRequest) -> bool:
    try:
        return request.path == reverse(ROUTE_NAME)
    except NoReverseMatch:  # a site that has not included mintroute.urls (yet)
        return False


def _refused_before_the_chain(request: HttpRequest) -> RouteError | None:
    """What no middleware beneath may answer first: a host the site does not serve (SecurityMiddleware,
    CommonMiddleware and the CSRF check all read it), a body larger than the route ever reads."""
    try:
        request.get_host()
    except DisallowedHost:
        logger.warning("Refused a request to the mint route: its Host is not in ALLOWED_HOSTS")
        return RouteError(400, "bad_request", "This site does not answer for the host name this request was sent to.")
    if request.method == "POST" and _declared_length(request) > MAX_BODY_BYTES:
        return RouteError(400, "bad_request", OVERSIZE_BODY)
    return None


def _declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:  # the body's own reader refuses what it cannot read
        return 0


def _the_routes_answer(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """`response` when the view gave it, or when no error replaced one; else the view's own answer
    (something beneath failed after the view answered: a mint is never thrown away), or, when the
    view never ran, the route's row for the error Django made."""
    answered: HttpResponseBase | None = getattr(request, _VIEW_ANSWER, None)
    if response is answered or response.status_code < 300:
        return response
    if answered is not None:
        logger.warning(
            "A middleware failed after the mint route answered (it made a %s); the route's answer was given",
            response.status_code,
        )
        return answered
    return _answer(foreign_row(response), request)


def _answer(refusal: RouteError, request: HttpRequest) -> HttpResponseBase:
    """A row the view never gave, counted like the view's own refusals (mintroute.metrics)."""
    metrics.count(refusal.error_code, request)
    return refusal.as_response()


def foreign_row(response: HttpResponseBase) -> RouteError:
    """The route's row for an answer that Django or a middleware made before the view ran."""
    status = response.status_code
    if status >= 500:  # a store that a middleware reads (sessions, the user) is unreachable
        return authentication_unavailable()
    if status == 401:
        return RouteError(
            401, "not_authenticated", "Log in first: this route mints tokens for authenticated users only."
        )
    if status == 403:
        return RouteError(403, "forbidden", "This request is not allowed to get sports tokens.")
    if status == 405:
        return RouteError(405, "method_not_allowed", "Use POST to get a token.", {"Allow": "POST"})
    if status == 429:
        wait = response.headers.get("Retry-After") or "60"
        return RouteError(429, "rate_limited", "Too many requests. Retry later.", {"Retry-After": wait})
    if status == 413:
        return RouteError(400, "bad_request", OVERSIZE_BODY)
    return RouteError(400, "bad_request", "The request could not be read as a request for a token.")
