"""The mint route's contract rows, driven over real HTTP against a foreign site."""

from __future__ import annotations

import httpx2

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import ForeignSite, log_in


def answers_every_row(site_url: str, sandbox: Sandbox, login_path: str = "/accounts/login/") -> list[httpx2.Response]:
    """Walk the rows a site can show without faking its upstream; returns every response seen.

    The default rate (10/m per user and IP) counts from the first request past CSRF.
    """
    seen: list[httpx2.Response] = []

    def expect(response: httpx2.Response, status: int, error: str | None = None) -> httpx2.Response:
        seen.append(response)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        if error is not None:
            assert response.json()["error"] == error
        return response

    anonymous = httpx2.post(f"{site_url}/api/sports-token", json={}, timeout=30)
    expect(anonymous, 401, "not_authenticated")
    assert "location" not in anonymous.headers

    with log_in(site_url, login_path=login_path) as browser:
        csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
        expect(browser.post("/api/sports-token", json={}), 403, "csrf_failed")
        assert expect(browser.get("/api/sports-token"), 405).headers["allow"] == "POST"
        json_csrf = {**csrf, "Content-Type": "application/json"}
        not_an_object = browser.post("/api/sports-token", content=b"[1]", headers=json_csrf)
        expect(not_an_object, 400, "bad_request")  # 1 of 10

        minted = expect(  # 2 of 10
            browser.post("/api/sports-token", json={"reason": "initial"}, headers=csrf), 200
        ).json()
        assert set(minted) == {"token", "expiresAt"}
        assert seen[-1].headers["cache-control"] == "no-store"
        reused = expect(browser.post("/api/sports-token", json={"reason": "refresh"}, headers=csrf), 200).json()
        assert reused == minted  # more than half its life left: no upstream call

        listing = httpx2.post(
            f"{sandbox.url}/sdk/v1/rpc",
            json={"jsonrpc": "2.0", "id": "1", "method": "matches.list", "params": {"limit": 3}},
            headers={"Authorization": f"Bearer {minted['token']}"},
            timeout=30,
        ).json()
        assert len(listing["result"]["data"]) == 3, listing

        sandbox.revoke()
        refused = browser.post("/api/sports-token", json={"reason": "unauthorized"}, headers=csrf)  # 4 of 10
        expect(refused, 502, "upstream_unauthorized")

        for _ in range(6):  # 5..10 of 10: the browser's token is reused
            expect(browser.post("/api/sports-token", json={}, headers=csrf), 200)
        limited = expect(browser.post("/api/sports-token", json={}, headers=csrf), 429, "rate_limited")
        assert int(limited.headers["retry-after"]) >= 1
    return seen


def assert_nothing_leaked(seen: list[httpx2.Response], site: ForeignSite, api_key: str) -> None:
    """No answer, header, command output or server log line carries the key or a traceback."""
    everything = "".join(response.text + str(response.headers) for response in seen) + "".join(site.log)
    assert api_key not in everything
    assert "Traceback" not in everything
