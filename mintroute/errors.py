"""The mint route's refusals: one exception carrying status, code and message, and the
handler that turns every DRF error into the route's JSON shape `{"error", "message"}`."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response


class RouteError(exceptions.APIException):
    """A refusal of the mint route, answered as `{"error": code, "message": message}`."""

    def __init__(self, status_code: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.message = message
        self.headers = headers or {}


class CsrfFailed(exceptions.PermissionDenied):
    pass


def route_exception_handler(error: Exception, context: dict[str, Any]) -> Response | None:
    """Every DRF error as the route's JSON body; anything else propagates (and is a bug)."""
    if isinstance(error, RouteError):
        return _respond(error.status_code, error.error_code, error.message, error.headers)
    if isinstance(error, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return _respond(
            status.HTTP_401_UNAUTHORIZED,
            "not_authenticated",
            "Log in first: this route mints tokens for logged-in users only.",
            {"WWW-Authenticate": "Session"},
        )
    if isinstance(error, CsrfFailed):
        return _respond(
            status.HTTP_403_FORBIDDEN,
            "csrf_failed",
            "CSRF token missing or wrong: send the csrftoken cookie's value in the X-CSRFToken header.",
        )
    if isinstance(error, exceptions.UnsupportedMediaType):
        return _respond(
            status.HTTP_400_BAD_REQUEST, "bad_request", "Send the body as JSON (Content-Type: application/json)."
        )
    if isinstance(error, exceptions.MethodNotAllowed):
        return _respond(status.HTTP_405_METHOD_NOT_ALLOWED, "method_not_allowed", "Use POST to get a token.")
    if isinstance(error, exceptions.APIException):
        return _respond(error.status_code, "bad_request", str(error.detail))
    return None


def _respond(status_code: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response({"error": code, "message": message}, status=status_code, headers=headers)
