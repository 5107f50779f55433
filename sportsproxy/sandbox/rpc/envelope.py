"""The JSON-RPC 2.0 envelope: reading a request body, writing a response."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sportsproxy.sandbox.conf import MAX_BODY_BYTES
from sportsproxy.sandbox.errors import INVALID_REQUEST, PARSE_ERROR, RpcError


@dataclass(frozen=True)
class RpcRequest:
    id: str
    method: str
    params: dict[str, Any]


def decode(body: bytes | str) -> Any:
    """The JSON value of a body or frame; `parse_error` if it is not JSON, `invalid_request` if too big."""
    size = len(body) if isinstance(body, bytes) else len(body.encode())
    if size > MAX_BODY_BYTES:
        raise RpcError(INVALID_REQUEST, f"Request is larger than {MAX_BODY_BYTES // 1024} KiB.")
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise RpcError(PARSE_ERROR, "Request JSON is nested too deeply.") from None
    except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
        raise RpcError(PARSE_ERROR, "Request body is not valid JSON.") from None


def request_id_of(payload: Any) -> str | None:
    """The id to echo in an error answer: the request's, when it is a string."""
    request_id = payload.get("id") if isinstance(payload, dict) else None
    return request_id if isinstance(request_id, str) else None


def validate(payload: Any) -> RpcRequest:
    """A well-formed request, or `invalid_request` saying what is wrong."""
    if isinstance(payload, list):
        raise RpcError(INVALID_REQUEST, "Batch requests are not supported; send one request object.")
    if not isinstance(payload, dict):
        raise RpcError(INVALID_REQUEST, "Request must be a JSON object (a JSON-RPC 2.0 envelope).")
    if payload.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'jsonrpc must be the string "2.0".')
    if not isinstance(payload.get("id"), str):
        raise RpcError(INVALID_REQUEST, "id must be a string.")
    if not isinstance(payload.get("method"), str):
        raise RpcError(INVALID_REQUEST, "method must be a string.")
    params = payload.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(INVALID_REQUEST, "params must be an object (or absent).")
    return RpcRequest(id=payload["id"], method=payload["method"], params=params)


def result_response(request_id: str, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: str | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.as_error_object()}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
