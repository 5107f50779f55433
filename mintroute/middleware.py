"""Optional: logging out also deletes the remembered-token cookie from the browser.

Without it a logged-out browser's cookie is never honoured again (the login it was bound to has
ended, mintroute.reuse) and expires with its token; with it, the logout's own response deletes it,
so no live token stays in a shared computer's cookie store. Add it to MIDDLEWARE:

    "mintroute.middleware.forget_token_on_logout",
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
