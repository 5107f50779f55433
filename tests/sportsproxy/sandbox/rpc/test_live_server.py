"""The sandbox over real HTTP: a live server on a real socket, called with httpx2."""

from __future__ import annotations

from typing import Any

import httpx2
import jwt
from django.conf import settings

from sportsproxy.sandbox.models import Account
from tests.support import envelope


def call(url: str, method: str, params: dict[str, Any], credential: str, **headers: str) -> dict[str, Any]:
    response = httpx2.post(
        f"{url}/sdk/v1/rpc",
        json=envelope(method, params),
        headers={"Authorization": f"Bearer {credential}", **headers},
        timeout=5,
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    answer: dict[str, Any] = response.json()
    return answer


def test_mint_then_use_the_token_over_real_http(live_server: Any, transactional_db: None) -> None:
    from sportsproxy.sandbox.accounts.keys import issue_key

    _, secret = issue_key(Account.objects.create(name="live-acme", tier="growth"), "live")
    minted = call(live_server.url, "tokens.create", {"ttl": 120}, secret)["result"]
    claims = jwt.decode(
        minted["token"], settings.SPORTS_SANDBOX_SIGNING_KEY, algorithms=["HS256"], audience="sports-sdk"
    )
    assert claims["exp"] - claims["iat"] == 120
    page = call(live_server.url, "matches.list", {"sports": ["football"], "limit": 3}, minted["token"])["result"]
    assert [match["sport"] for match in page["data"]] == ["football"] * 3
    refused = call(live_server.url, "matches.list", {}, secret, Origin="https://evil.example")
    assert refused["error"]["code"] == "unauthorized"


def test_errors_over_real_http_keep_status_200(live_server: Any, transactional_db: None) -> None:
    response = httpx2.post(f"{live_server.url}/sdk/v1/rpc", content=b"{not json", timeout=5)
    assert response.status_code == 200
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": "parse_error", "message": "Request body is not valid JSON."},
    }
    huge = httpx2.post(f"{live_server.url}/sdk/v1/rpc", content=b"{" + b" " * 200_000 + b"}", timeout=5)
    assert huge.status_code == 200
    assert huge.json()["error"]["code"] == "invalid_request"
