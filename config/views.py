"""Site-level views: the health probe and the product's first page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from config.browser_client import client_config
from config.csp import content_security_policy
from sportsproxy.service import SPORTS


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answers 200 while the process serves requests; touches neither upstream nor the database."""
    return JsonResponse({"status": "ok"})


def sport_name(sport: str) -> str:
    """How a page names one of the service's sports: "ice-hockey" is "Ice hockey"."""
    return sport.replace("-", " ").capitalize()


@require_safe
@content_security_policy
def start_page(request: HttpRequest) -> HttpResponse:
    """The product's first page: a sentence and a way to log in for visitors; for a logged-in user,
    the matches and their live events, which the browser fetches with a token from the mint route.

    A page rendered for a user is `Cache-Control: private, no-store` (no shared or browser cache keeps
    it); the visitors' page is `private, no-cache` (it varies on the session cookie all the same)."""
    if not request.user.is_authenticated:
        response = render(request, "start.html")
        patch_cache_control(response, private=True, no_cache=True)
        return response
    sports = [(sport, sport_name(sport)) for sport in SPORTS]
    response = render(request, "start.html", {"client_config": client_config(), "sports": sports})
    patch_cache_control(response, private=True, no_store=True)
    return response
