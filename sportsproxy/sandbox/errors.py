"""JSON-RPC error codes of the service, and the exception that carries one."""

from __future__ import annotations

from typing import Any, Literal

# The codes are written once, in sportsproxy.service.
from sportsproxy.service import (
    FORBIDDEN,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RATE_LIMITED,
    UNAUTHORIZED,
)

__all__ = [
    "FORBIDDEN",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RATE_LIMITED",
    "UNAUTHORIZED",
    "RpcError",
    "UnauthorizedReason",
    "invalid_params",
    "unauthorized",
]


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
