"""Site-level views: the health probe, the product's first page, and the site's 404 and 500 pages."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.cache import patch_cache_control
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from config.browser_client import client_config
from config.context_processors import identity
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


# The error pages (handler404 and handler500 in config/urls.py) are rendered without the request, as the 503
# page is: they read neither the database nor the cache (no `user`, no session), so a page that is missing
# while a store is down is still a 404 in the product's name, and the 500 page never fails in its turn.


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404 in the product's name. Django's own handler renders 404.html with the request, whose context
    processors read the session and the user: with the database down, a missing page would be a 500."""
    return HttpResponse(render_to_string("404.html", identity()), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """500 in the product's name: Django's own handler renders 500.html with an empty context."""
    return HttpResponse(render_to_string("500.html", identity()), status=500)
