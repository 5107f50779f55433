"""The mint route over a real socket, as curl or a browser would use it."""

from __future__ import annotations

import re
from typing import Any

import httpx2
from django.contrib.auth.models import User


def test_log_in_then_mint_with_the_session_cookie_and_csrf_header(live_server: Any, transactional_db: None) -> None:
    User.objects.create_user("player", password="live-pass-123")
    with httpx2.Client(base_url=live_server.url, timeout=10) as browser:
        login_page = browser.get("/accounts/login/")
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text)
        assert form_token is not None
        logged_in = browser.post(
            "/accounts/login/",
            data={"username": "player", "password": "live-pass-123", "csrfmiddlewaretoken": form_token.group(1)},
        )
        assert logged_in.status_code == 302
        minted = browser.post(
            "/api/sports-token", json={"reason": "initial"}, headers={"X-CSRFToken": browser.cookies["csrftoken"]}
        )
        assert minted.status_code == 200
        assert set(minted.json()) == {"token", "expiresAt"}
        assert minted.headers["cache-control"] == "no-store"

        # The same user logs in again in the same browser without logging out: a new login mints afresh.
        again_page = browser.get("/accounts/login/")
        again_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', again_page.text)
        assert again_token is not None
        session_key = browser.cookies["sessionid"]
        again = browser.post(
            "/accounts/login/",
            data={"username": "player", "password": "live-pass-123", "csrfmiddlewaretoken": again_token.group(1)},
        )
        assert again.status_code == 302
        assert browser.cookies["sessionid"] == session_key  # Django kept the session key
        second = browser.post(
            "/api/sports-token", json={"reason": "initial"}, headers={"X-CSRFToken": browser.cookies["csrftoken"]}
        )
        assert second.status_code == 200
        assert second.json()["token"] != minted.json()["token"]

    anonymous = httpx2.post(f"{live_server.url}/api/sports-token", json={}, timeout=10)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "not_authenticated"
