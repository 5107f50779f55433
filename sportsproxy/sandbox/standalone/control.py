"""The dashboard's powers over HTTP, for a test process that must not reach into the database.

    POST /control/v1/keys            {"account", "tier"?, "env"?}   -> 201 {"secret"}
    POST /control/v1/keys/revoke     {"secret"}                     -> 200 {}
    POST /control/v1/quota           {"account", "requestsPerMinute"} -> 200 {}
    POST /control/v1/tokens/expire   {"token"}                      -> 200 {}

Mounted only when the server starts with a control secret, and each request must carry it as
`Authorization: Bearer <secret>`. Errors are `{"error": code, "message": sentence}`.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from sportsproxy.sandbox.standalone import dashboard
from sportsproxy.sandbox.standalone.dashboard import DashboardError

MAX_BODY_BYTES = 16 * 1024
ControlView = Callable[[HttpRequest], JsonResponse]


def control_endpoint(handle: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]) -> ControlView:
    """A POST view that authenticates the control secret, reads a JSON object, and answers JSON."""

    @csrf_exempt  # a test process calls it with the control secret, never a browser with cookies
    def view(request: HttpRequest) -> JsonResponse:
        try:
            if request.method != "POST":
                raise DashboardError(405, "method_not_allowed", "Send control requests with POST.")
            _authenticate(request.headers.get("Authorization", ""))
            status, answer = handle(_json_object(request))
        except DashboardError as error:
            return JsonResponse({"error": error.code, "message": error.message}, status=error.status)
        return JsonResponse(answer, status=status)

    return view


def control_secret() -> str:
    """The secret the server was started with; empty when it has no control endpoints."""
    return str(getattr(settings, "SPORTS_SANDBOX_CONTROL_SECRET", ""))


def _authenticate(authorization: str) -> None:
    scheme, _, presented = authorization.partition(" ")
    expected = control_secret()
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), expected.encode()):
        raise DashboardError(
            401, "not_authenticated", "Send the control secret the server was started with as a Bearer token."
        )


def _json_object(request: HttpRequest) -> dict[str, Any]:
    body = request.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise DashboardError(413, "too_large", f"A control request is at most {MAX_BODY_BYTES} bytes.")
    try:
        payload = json.loads(body)
    except ValueError:
        raise DashboardError(400, "bad_request", "The body must be a JSON object.") from None
    if not isinstance(payload, dict):
        raise DashboardError(400, "bad_request", "The body must be a JSON object.")
    return payload


def _text(payload: dict[str, Any], name: str, default: str | None = None) -> str:
    value = payload.get(name, default)
    if not isinstance(value, str) or not value:
        raise DashboardError(400, "bad_request", f"{name!r} must be a non-empty string.")
    return value


def _count(payload: dict[str, Any], name: str) -> int:
    value = payload.get(name)
    if type(value) is not int or value < 0:
        raise DashboardError(400, "bad_request", f"{name!r} must be a whole number, 0 or more.")
    return value


@control_endpoint
def create_key(payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    account = _text(payload, "account")
    secret = dashboard.create_key(account, _text(payload, "tier", "growth"), _text(payload, "env", "test"))
    return 201, {"secret": secret}


@control_endpoint
def revoke_key(payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    dashboard.revoke(_text(payload, "secret"))
    return 200, {}


@control_endpoint
def set_quota(payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    dashboard.set_quota(_text(payload, "account"), _count(payload, "requestsPerMinute"))
    return 200, {}


@control_endpoint
def expire_token(payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    dashboard.expire_token(_text(payload, "token"))
    return 200, {}
