"""Content-Security-Policy for the pages: only this site's own scripts and the service's origins."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from config.service_addresses import origin

P = ParamSpec("P")


def policy(request: HttpRequest) -> str:
    """The page may talk to itself (HTTP and WebSocket) and to the configured service addresses."""
    host = request.get_host()
    websocket_self = f"{'wss' if request.is_secure() else 'ws'}://{host}"
    service = [origin(settings.SPORTS_PUBLIC_BASE_URL), origin(settings.SPORTS_PUBLIC_WS_URL)]
    connect = " ".join(["'self'", websocket_self, *[address for address in service if address]])
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src {connect}",
            "frame-ancestors 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "object-src 'none'",
        ]
    )


def content_security_policy(view: Callable[P, HttpResponse]) -> Callable[P, HttpResponse]:
    """Adds the policy to the view's responses."""

    @functools.wraps(view)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        response = view(*args, **kwargs)
        request = args[0]
        assert isinstance(request, HttpRequest)
        response.headers.setdefault("Content-Security-Policy", policy(request))
        return response

    return wrapped
