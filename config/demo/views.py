"""The demo page, its server-rendered panel, and the demo-only "expire my token" helper.

The two HTML views answer 503 while a store they read is down (config/unavailable.py), and what they
render for the logged-in user is `Cache-Control: private, no-store`; the helper answers its own JSON.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_POST, require_safe

from config import browser_client
from config.csp import content_security_policy
from config.demo.mode import is_demo
from config.demo.token_end import end_the_logins_token
from config.unavailable import fails_politely
from mintroute import RouteError, enforce_rate_limit
from sportsproxy.django.shared import get_client
from sportsproxy.errors import SportsError
from sportsproxy.service import SPORTS


def kept_by_no_cache(response: HttpResponse) -> HttpResponse:
    """A page of the user's: no shared or browser cache keeps it."""
    patch_cache_control(response, private=True, no_store=True)
    return response


@fails_politely
@login_required
@require_safe
@content_security_policy
def page(request: HttpRequest) -> HttpResponse:
    """The demo page: the browser client minting, calling and subscribing, beside a server-rendered panel."""
    client_config = {**browser_client.client_config(), "debugHelpers": is_demo()}  # "expire my token": the demo only
    return kept_by_no_cache(render(request, "demo/page.html", {"client_config": client_config, "sports": SPORTS}))


@fails_politely
@login_required
@require_safe
def server_matches(request: HttpRequest) -> HttpResponse:
    """An HTML table of matches fetched on the server with the API key (an HTMX fragment).

    Every request spends the API key's quota, so it is rate-limited per user and per client IP
    like the mint route (SPORTS_TOKEN_RATE, counted separately): copy this pattern for any view
    that calls the service on a user's behalf.
    """
    try:
        enforce_rate_limit(request, group="demo:server-matches", counted="server-rendered listings")
    except RouteError as refusal:
        refused = render(request, "demo/server_matches.html", {"error": refusal.message}, status=refusal.status_code)
        for name, value in refusal.headers.items():
            refused[name] = value
        return kept_by_no_cache(refused)
    sports = [sport for sport in request.GET.getlist("sports") if sport] or None  # the service validates them
    context: dict[str, object] = {"sports": sports}
    try:
        context["page"] = get_client().matches.list(sports=sports, limit=8)
    except (SportsError, ImproperlyConfigured) as error:
        context["error"] = f"The server could not list matches: {error}"
    return kept_by_no_cache(render(request, "demo/server_matches.html", context))


@login_required
@require_POST
def expire_token(request: HttpRequest) -> JsonResponse:
    """The demo only (debug on, sandbox mounted): end this browser's token early, so its next call is unauthorized."""
    if not is_demo():
        raise Http404("Tokens can only be ended early in the demo (debug on, the embedded sandbox mounted).")
    return JsonResponse({"expired": end_the_logins_token(request)})
