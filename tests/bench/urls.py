"""The project's URLs plus the baselines the mint route is measured against."""

from __future__ import annotations

import json
import uuid

import httpx2
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_POST

from config.urls import urlpatterns as project_urlpatterns
from mintroute.views import sports_token

_upstream = httpx2.Client(timeout=5)  # one pool, as the SDK keeps one


@require_POST
@csrf_protect
@login_required
def session_only(request: HttpRequest) -> JsonResponse:
    """A bare session-authenticated POST view: the route's floor without the upstream call."""
    return JsonResponse({"user": request.user.pk})


@require_POST
@csrf_protect
@login_required
def raw_mint(request: HttpRequest) -> JsonResponse:
    """Session-authenticated, then one raw upstream POST of tokens.create: no SDK, no reuse, no limit."""
    envelope = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "tokens.create", "params": {"ttl": 600}}
    answer = _upstream.post(
        f"{settings.SPORTS_BASE_URL}/sdk/v1/rpc",
        content=json.dumps(envelope),
        headers={"Authorization": f"Bearer {settings.SPORTS_API_KEY}", "Content-Type": "application/json"},
    ).json()
    return JsonResponse(answer["result"])


async def empty_async(request: HttpRequest) -> HttpResponse:
    """Nothing but an answer, as an async view: what Django's ASGI path costs before any view (the floor row)."""
    return HttpResponse(b"")


def empty_sync(request: HttpRequest) -> HttpResponse:
    """Nothing but an answer, as a plain view: what gunicorn's WSGI path costs before any view (the floor row)."""
    return HttpResponse(b"")


urlpatterns = [
    *project_urlpatterns,
    path("bench/session-only", session_only),
    path("bench/raw-mint", raw_mint),
    # The route's plain (WSGI) view at its own URL, so an ASGI server can be measured running it too.
    path("bench/sync-mint", sports_token),
    path("bench/empty-async", empty_async),
    path("bench/empty-sync", empty_sync),
]
