"""Helpers for talking to the sandbox's real RPC endpoint from tests."""

from __future__ import annotations

import itertools
import json
from typing import Any

from django.test import Client

_ids = itertools.count(1)


def envelope(method: str, params: Any = None, request_id: str | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id or f"req-{next(_ids)}", "method": method}
    if params is not None:
        request["params"] = params
    return request


def post_rpc(body: bytes | str, credential: str | None = None, **headers: str) -> dict[str, Any]:
    """POST a raw body to /sdk/v1/rpc; asserts the HTTP status is 200 and returns the envelope."""
    if credential is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {credential}"
    response = Client().post("/sdk/v1/rpc", body, content_type="application/json", **headers)  # type: ignore[arg-type]
    assert response.status_code == 200, response.content
    answer: dict[str, Any] = json.loads(response.content)
    assert answer["jsonrpc"] == "2.0"
    assert ("result" in answer) != ("error" in answer)
    return answer


def error_code(answer: dict[str, Any]) -> str:
    assert "error" in answer, f"expected an error, got {answer}"
    code: str = answer["error"]["code"]
    return code
