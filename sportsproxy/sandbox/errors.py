"""JSON-RPC error codes of the service, and the exception that carries one."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = "parse_error"
INVALID_REQUEST = "invalid_request"
METHOD_NOT_FOUND = "method_not_found"
INVALID_PARAMS = "invalid_params"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
RATE_LIMITED = "rate_limited"
INTERNAL_ERROR = "internal_error"


class RpcError(Exception):
    """An error the service answers inside the envelope (never as an HTTP status)."""

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_error_object(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def unauthorized(message: str) -> RpcError:
    return RpcError(UNAUTHORIZED, message)


def invalid_params(message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, message)
