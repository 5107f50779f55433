"""The sandbox's HTTP endpoint, `POST /sdk/v1/rpc`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from sportsproxy.sandbox.conf import MAX_BODY_BYTES
from sportsproxy.sandbox.errors import INVALID_REQUEST, RpcError
from sportsproxy.sandbox.rpc.dispatch import handle_http
from sportsproxy.sandbox.rpc.envelope import error_response

# Any origin may call with a JWT; credentials mode is never allowed, so cookies play no part.
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "86400",
}


@csrf_exempt  # authenticated by the Bearer header alone; cookies are ignored
def rpc(request: HttpRequest) -> HttpResponse:
    if request.method == "OPTIONS":
        return HttpResponse(status=204, headers=CORS_HEADERS)
    if request.method != "POST":
        error = RpcError(INVALID_REQUEST, "Send JSON-RPC requests with POST.")
        return JsonResponse(error_response(None, error), status=405, headers={"Allow": "POST, OPTIONS", **CORS_HEADERS})
    answer = handle_http(
        # One byte past the cap is enough for envelope.decode to refuse an oversize body.
        request.read(MAX_BODY_BYTES + 1),
        authorization=request.headers.get("Authorization"),
        origin=request.headers.get("Origin"),
    )
    return JsonResponse(answer, headers=CORS_HEADERS)
