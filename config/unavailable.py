"""The site's HTML pages while a store they need is unreachable: 503 with `Retry-After` and a page
that says to try again shortly, never Django's "Server Error (500)".

`fails_politely(view)` wraps a page's view (the login forms, the logout and the first page, in
config/urls.py); `every_page_fails_politely(patterns)` wraps each view of a list of URL patterns (the
admin's). The route, `/healthz`, `/readyz` and `/metrics` are never wrapped: they answer JSON or
text of their own. A
database or Redis that refuses, resets or times out raises from the view, or from its template as
it renders (the `user` of every page reads the session and the user from the database): both happen
inside the wrapper, which renders the page at once for that reason. The page itself is rendered
without the request, so it reads no store. Django closes a broken database connection when the
request ends, so the next request connects afresh: the pages recover with the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string
from django.template.response import SimpleTemplateResponse
from django.urls import URLPattern, URLResolver
from redis.exceptions import RedisError

from config.context_processors import identity

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5  # a database or cache outage is usually short; the page asks for no more
# What an unreachable store raises: Django's database errors, redis-py's (Django's Redis cache), and
# the socket errors of any other client.
STORE_ERRORS = (DatabaseError, RedisError, ConnectionError, TimeoutError)

PageView = Callable[..., HttpResponseBase]


def fails_politely(view: PageView) -> PageView:
    """`view`, answering 503 with `Retry-After` (never a 500) while a store it reads is unreachable."""

    @wraps(view)
    def polite_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            response = view(request, *args, **kwargs)
            if isinstance(response, SimpleTemplateResponse):
                response.render()  # here, not after the view returns: the template reads the stores too
        except STORE_ERRORS:
            logger.warning("A store %s needs is unreachable; answering 503", request.path, exc_info=True)
            return store_unavailable()
        return response

    return polite_view


def every_page_fails_politely(patterns: list[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    """`patterns` with each view wrapped in `fails_politely`, in included lists too (the admin's models)."""
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = fails_politely(pattern.callback)
        else:
            every_page_fails_politely(pattern.url_patterns)
    return patterns


def store_unavailable() -> HttpResponse:
    """The 503 page: rendered without the request, so that it needs neither the database nor the cache."""
    page = render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS, **identity()})
    return HttpResponse(
        page, status=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}
    )
