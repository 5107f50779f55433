"""Optional middleware for a site that hosts the route; add either to MIDDLEWARE by its path.

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

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from mintroute.reuse import TOKEN_COOKIE

_LOGGED_OUT = "_mintroute_logged_out"


@receiver(user_logged_out)
def _note_logout(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    if request is not None:
        setattr(request, _LOGGED_OUT, True)


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
