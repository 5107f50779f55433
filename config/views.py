"""Site-level views: the health probe and the product's starting page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from config.browser_client import client_config
from config.csp import content_security_policy


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answers 200 while the process serves requests; touches neither upstream nor the database."""
    return JsonResponse({"status": "ok"})


@require_safe
@content_security_policy
def start_page(request: HttpRequest) -> HttpResponse:
    """The page to build on: the project's name, log in or out, and the browser client with its token and socket."""
    return render(request, "start.html", {"client_config": client_config()})
