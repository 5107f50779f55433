"""Project-level views: health, the demo page, and the demo's sandbox-only helpers."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from config.csp import content_security_policy
from mintroute.minting import remembered_token

DEMO_SPORTS = ("football", "basketball", "tennis", "ice-hockey", "baseball", "esports")


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answers 200 while the process serves requests; touches neither upstream nor the database."""
    return JsonResponse({"status": "ok"})


@login_required
@require_safe
@content_security_policy
def demo(request: HttpRequest) -> HttpResponse:
    """The demo page: the browser client minting, calling and subscribing, beside a server-rendered panel."""
    client_config = {
        "authEndpoint": "/api/sports-token",
        "baseUrl": settings.SPORTS_PUBLIC_BASE_URL or None,
        "wsUrl": settings.SPORTS_PUBLIC_WS_URL or None,
        "refreshLeewaySec": settings.SPORTS_CLIENT_REFRESH_LEEWAY,
        "sandbox": settings.SPORTS_SANDBOX,
    }
    return render(request, "demo.html", {"client_config": client_config, "sports": DEMO_SPORTS})


@login_required
@require_POST
def expire_token(request: HttpRequest) -> JsonResponse:
    """Sandbox only: end this browser's token early, so its next call is unauthorized."""
    if not settings.SPORTS_SANDBOX:
        raise Http404("Tokens can only be ended early in the embedded sandbox.")
    from sportsproxy.sandbox.tokens import expire_early

    stored = remembered_token(request)
    expired = expire_early(stored["token"]) if stored else False
    return JsonResponse({"expired": expired})
