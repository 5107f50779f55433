"""The in-process transport answers exactly as the HTTP endpoint does."""

from __future__ import annotations

import json

import httpx2

from sportsproxy.sandbox.rpc.transport import SandboxTransport
from tests.support import envelope, post_rpc


def test_in_process_and_http_answers_are_identical(api_key: str) -> None:
    body = json.dumps(envelope("matches.list", {"sports": ["baseball"], "limit": 2}, request_id="same"))
    with httpx2.Client(transport=SandboxTransport(), base_url="http://sandbox.invalid") as http:
        in_process = http.post("/sdk/v1/rpc", content=body, headers={"Authorization": f"Bearer {api_key}"})
    assert in_process.status_code == 200
    assert in_process.json() == post_rpc(body, api_key)


def test_the_origin_rule_applies_in_process_too(api_key: str) -> None:
    with httpx2.Client(transport=SandboxTransport(), base_url="http://sandbox.invalid") as http:
        answer = http.post(
            "/sdk/v1/rpc",
            json=envelope("auth"),
            headers={"Authorization": f"Bearer {api_key}", "Origin": "https://app.example.com"},
        ).json()
    assert answer["error"]["code"] == "unauthorized"


def test_other_paths_are_not_found() -> None:
    with httpx2.Client(transport=SandboxTransport(), base_url="http://sandbox.invalid") as http:
        assert http.post("/elsewhere", content=b"{}").status_code == 404
        assert http.get("/sdk/v1/rpc").status_code == 404
