"""Two URLs for whoever runs the site: `GET /readyz`, the readiness probe (mintroute.readiness), and
`GET /metrics`, the route's metrics for Prometheus (mintroute.metrics). A site adds them from
`mintroute.urls.operations` (docs/operations.md).

Both answer without a session, a CSRF check, a login, a database transaction or any rate limit,
and are never cached. /metrics is off unless SPORTS_METRICS is on; then it answers the addresses in
SPORTS_METRICS_ALLOW (default loopback) or a caller with `Authorization: Bearer
<SPORTS_METRICS_TOKEN>`; anyone else gets the site's 404, as if it did not exist. A request a proxy
relayed (an X-Forwarded-For or Forwarded header) counts by the address the trusted proxies forwarded
(SPORTS_TRUSTED_PROXY_COUNT); with no proxy trusted it counts by none: the peer is the proxy, whose
loopback address would otherwise let the whole internet in.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from mintroute import conf, metrics, readiness
from mintroute.ratelimits import client_address, relayed_without_its_client

logger = logging.getLogger(__name__)

_Response = TypeVar("_Response", bound=HttpResponse)

FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


@csrf_exempt
@login_not_required
@require_safe
@transaction.non_atomic_requests  # the probe opens its own connection; no transaction to wait on
def readyz(request: HttpRequest) -> JsonResponse:
    """200 `{"ready": true, "checks": {...}}` when this process can serve: its database and cache
    answer, and it is not stopping; else 503 with Retry-After (and `"stopping": true` while it drains).
    The service's state is in `checks` either way, never the status. Within 2 s, whatever hangs beneath."""
    ready, checks = readiness.readiness()
    stopping = readiness.stopping()  # read once: the body and the status agree
    ready = ready and not stopping
    body = {"ready": ready, **({"stopping": True} if stopping else {}), "checks": checks}
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = str(readiness.RETRY_AFTER_SECONDS)
    return _no_store(response)


@csrf_exempt
@login_not_required
@require_safe
@transaction.non_atomic_requests
def metrics_view(request: HttpRequest) -> HttpResponse:
    """The route's metrics in Prometheus's text format, for an allowed address or the bearer token."""
    if not metrics.enabled() or not may_read_metrics(request):
        raise Http404
    readiness.service_state()  # a check of the last interval, or a new one: sports_service_up stays current
    body, content_type = metrics.exposition()
    return _no_store(HttpResponse(body, content_type=content_type))


def may_read_metrics(request: HttpRequest) -> bool:
    """The bearer token, when one is set, from anywhere; else an address in SPORTS_METRICS_ALLOW."""
    token = conf.metrics_token()
    scheme, _, credential = str(request.META.get("HTTP_AUTHORIZATION", "")).partition(" ")
    if token and scheme.lower() == "bearer" and constant_time_compare(credential.strip(), token):
        return True
    try:
        allowed, proxies = conf.metrics_allow(), conf.trusted_proxy_count()
    except Exception:
        logger.exception("The settings of /metrics are wrong; answering 404")
        return False
    if proxies == 0 and any(request.META.get(header) for header in FORWARDING_HEADERS):
        return False  # relayed by a proxy this site does not trust: the caller's address is unknown
    if relayed_without_its_client(request):
        return False  # a trusted proxy that did not say whom it relays for: unknown, so not allowed
    address = client_address(request)
    return address is not None and any(address in network for network in allowed)


def _no_store(response: _Response) -> _Response:
    response["Cache-Control"] = "no-store"
    return response
