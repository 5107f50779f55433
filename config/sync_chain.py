"""The last entry of MIDDLEWARE: under ASGI, every middleware above it runs in the request's thread,
entered once, instead of crossing from the event loop to that thread and back for each of its steps.

Django's ASGI handler runs a middleware built on MiddlewareMixin (sessions, CSRF, authentication,
messages, ...) in async mode when the handler below it is async. Each of its process_request,
process_view and process_response then hops to the request's thread and back: 13 hops a request
for this site's chain, each a wake-up of that thread and then of the loop. A middleware that runs
only synchronously, placed innermost, makes Django build the whole chain above it synchronously:
one hop in, the chain as under WSGI, one hop back to the loop for the URL resolution and the view.
An async view (the mint route's async entry) still runs on the loop; a plain view still runs in
the request's thread.

Under WSGI it only calls the next handler. Measured in docs/deploy.md ("The route under ASGI").
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase


def run_chain_in_one_thread(
    get_response: Callable[[HttpRequest], HttpResponseBase],
) -> Callable[[HttpRequest], HttpResponseBase]:
    """A synchronous pass-through (Django takes a plain function middleware for sync-only)."""

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return get_response(request)

    return middleware
