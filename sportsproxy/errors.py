"""Errors raised by the sports-data SDK.

    SportsError                      every failure of a call
    ├── SportsAPIError               the service answered with an error envelope
    │   ├── UnauthorizedError          `unauthorized`: bad, revoked or expired credential
    │   ├── ForbiddenError             `forbidden`: authenticated, but not allowed (a token minting)
    │   ├── RateLimitedError           `rate_limited`: quota spent; see `retry_after`
    │   ├── InvalidParamsError         `invalid_params`: a param failed validation
    │   ├── InvalidRequestError        `invalid_request` / `parse_error`: the envelope was refused
    │   ├── MethodNotFoundError        `method_not_found`
    │   └── ServiceInternalError       `internal_error`: the service failed
    └── SportsTransportError         no usable answer arrived
        ├── SportsUnavailable          could not connect, or the connection broke
        ├── SportsTimeout              no answer within the timeout
        └── SportsProtocolError        an answer that is not a JSON-RPC envelope for this request

No error's message or repr ever contains the API key.
"""

from __future__ import annotations

from typing import Any

from sportsproxy import service


class SportsError(Exception):
    """Base of every SDK error. `request_id` is the JSON-RPC id of the failed call, when one was sent."""

    def __init__(self, message: str, *, request_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(message={self.message!r}, request_id={self.request_id!r})"


class SportsAPIError(SportsError):
    """The service answered with `error.code`; `retry_after` is set when it said how long to wait."""

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        request_id: str | None = None,
        retry_after: float | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, request_id=request_id)
        self.code = code
        self.retry_after = retry_after
        self.data: dict[str, Any] = data or {}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
            f"request_id={self.request_id!r}, retry_after={self.retry_after!r})"
        )


class UnauthorizedError(SportsAPIError):
    @property
    def reason(self) -> str | None:
        """Why: the service's `error.data.reason` (`expired_token`, `revoked_key`, ...), or None."""
        reason = self.data.get("reason")
        return reason if isinstance(reason, str) else None


class ForbiddenError(SportsAPIError):
    pass


class RateLimitedError(SportsAPIError):
    pass


class InvalidParamsError(SportsAPIError):
    pass


class InvalidRequestError(SportsAPIError):
    pass


class MethodNotFoundError(SportsAPIError):
    pass


class ServiceInternalError(SportsAPIError):
    pass


class SportsTransportError(SportsError):
    pass


class SportsUnavailable(SportsTransportError):
    pass


class SportsTimeout(SportsTransportError):
    pass


class SportsProtocolError(SportsTransportError):
    pass


ERROR_CLASSES: dict[str, type[SportsAPIError]] = {
    service.UNAUTHORIZED: UnauthorizedError,
    service.FORBIDDEN: ForbiddenError,
    service.RATE_LIMITED: RateLimitedError,
    service.INVALID_PARAMS: InvalidParamsError,
    service.INVALID_REQUEST: InvalidRequestError,
    service.PARSE_ERROR: InvalidRequestError,
    service.METHOD_NOT_FOUND: MethodNotFoundError,
    service.INTERNAL_ERROR: ServiceInternalError,
}


def api_error(answer: dict[str, Any], request_id: str) -> SportsError:
    """The SportsError an error envelope stands for (SportsProtocolError if it is malformed)."""
    error = answer["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return SportsProtocolError("The answer's error is not a {code, message} object.", request_id=request_id)
    if answer.get("id") not in (request_id, None):
        return SportsProtocolError(
            f"The answer's id {answer.get('id')!r} is not this request's.", request_id=request_id
        )
    data = error.get("data")
    retry_after = data.get("retryAfter") if isinstance(data, dict) else None
    error_class = ERROR_CLASSES.get(error["code"], SportsAPIError)
    return error_class(
        str(error.get("message", "")),
        code=error["code"],
        request_id=request_id,
        retry_after=float(retry_after) if isinstance(retry_after, (int, float)) else None,
        data=data if isinstance(data, dict) else None,
    )
