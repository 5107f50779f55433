"""The mint route's refusals: one exception carrying status, code, message and headers, answered
as `{"error": code, "message": message}`."""

from __future__ import annotations

from django.http import JsonResponse


class RouteError(Exception):
    """A refusal of the mint route (401, 403, 400, 429, 502, 503, 504)."""

    def __init__(self, status_code: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_code = code
        self.message = message
        self.headers = headers or {}

    def as_response(self) -> JsonResponse:
        return JsonResponse(
            {"error": self.error_code, "message": self.message}, status=self.status_code, headers=self.headers
        )
