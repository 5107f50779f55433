"""Site-level views (the demo's are in `config/demo/`)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answers 200 while the process serves requests; touches neither upstream nor the database."""
    return JsonResponse({"status": "ok"})
