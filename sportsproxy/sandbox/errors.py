"""JSON-RPC error codes of the service, and the exception that carries one."""

from __future__ import annotations

from typing import Any, Literal

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


# Why a credential was refused: `error.data.reason` of every `unauthorized`.
UnauthorizedReason = Literal[
    "missing_credential",  # no Authorization header
    "malformed_credential",  # not a Bearer header, not an API key's shape, an API key sent as a token
    "unknown_key",
    "revoked_key",
    "expired_token",
    "invalid_token",  # bad signature, algorithm, claims or audience; another account's credential
    "key_from_browser",  # an API key on a request that carries an Origin header
    "auth_required",  # a socket frame before `auth`
]


def unauthorized(message: str, reason: UnauthorizedReason) -> RpcError:
    return RpcError(UNAUTHORIZED, message, {"reason": reason})


def invalid_params(message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, message)
