"""Server-rendered fragments that use the server SDK (with the API key), for the demo page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from sportsproxy.errors import SportsError
from sportsproxy.shared import get_client


@login_required
@require_safe
def matches_fragment(request: HttpRequest) -> HttpResponse:
    """An HTML table of matches fetched on the server with the API key (an HTMX fragment)."""
    sports = [sport for sport in request.GET.getlist("sports") if sport] or None  # the service validates them
    context: dict[str, object] = {"sports": sports}
    try:
        context["page"] = get_client().matches.list(sports=sports, limit=8)
    except (SportsError, ImproperlyConfigured) as error:
        context["error"] = f"The server could not list matches: {error}"
    return render(request, "sportsproxy/matches_fragment.html", context)
