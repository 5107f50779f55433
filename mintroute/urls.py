"""The route's URL: `path("", include("mintroute.urls"))` in the site's URLconf.

`operations` holds the URLs for whoever runs the site, `GET /readyz` and `GET /metrics`
(docs/operations.md): a site adds them on purpose (`*operations` in its urlpatterns), so that
including the route never shadows a `/metrics` the site already serves.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.urls import ResolverMatch, URLPattern, path
from django.urls.resolvers import RoutePattern

from mintroute.operations import metrics_view, readyz
from mintroute.views import sports_token, sports_token_async

app_name = "mintroute"


class SyncOrAsyncPattern(URLPattern):
    """Resolves to `async_view` when Django serves the request on an event loop (its ASGI
    handler resolves URLs there) and to the plain view otherwise (WSGI): each server gets the
    entry that suits it, at one URL."""

    def __init__(self, route: str, view: Any, async_view: Any, name: str) -> None:
        super().__init__(RoutePattern(route, name=name, is_endpoint=True), view, name=name)
        self.async_view = async_view

    def resolve(self, path: str) -> ResolverMatch | None:
        if not _on_event_loop():
            return super().resolve(path)
        match = self.pattern.match(path)
        if not match:
            return None
        _, args, captured = match
        return ResolverMatch(
            self.async_view,
            args,
            {**captured, **self.default_args},
            self.name,
            route=str(self.pattern),
            captured_kwargs=captured,
            extra_kwargs=self.default_args,
        )


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


urlpatterns = [SyncOrAsyncPattern("api/sports-token", sports_token, sports_token_async, name="sports-token")]

operations = [path("readyz", readyz, name="readyz"), path("metrics", metrics_view, name="metrics")]
