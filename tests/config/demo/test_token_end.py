"""In the demo a logout ends the login's token in the same request; elsewhere it ends nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.mintroute.conftest import logged_in_browser, post_token
from tests.support import envelope, post_rpc


def log_out_with_a_token(settings: Any, api_key: str) -> str:
    settings.SPORTS_API_KEY = api_key
    browser = logged_in_browser()
    token: str = post_token(browser).json()["token"]
    assert "result" in post_rpc(json.dumps(envelope("auth")), token)
    logged_out = browser.post("/accounts/logout/", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert logged_out.status_code == 200
    assert post_token(browser).status_code == 401  # the session is gone
    return token


def test_a_logout_in_the_demo_ends_the_logins_token(settings: Any, api_key: str) -> None:
    settings.DEBUG = True  # the demo: debug on, sandbox mounted
    token = log_out_with_a_token(settings, api_key)
    assert post_rpc(json.dumps(envelope("auth")), token)["error"]["code"] == "unauthorized"


def test_a_logout_outside_the_demo_leaves_the_token_its_life(settings: Any, api_key: str) -> None:
    settings.DEBUG = False
    token = log_out_with_a_token(settings, api_key)
    assert "result" in post_rpc(json.dumps(envelope("auth")), token)


def test_a_logout_still_ends_the_session_when_the_token_cannot_be_ended(
    settings: Any, api_key: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def cache_away(token: str) -> bool:
        raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("sportsproxy.sandbox.accounts.tokens.expire_early", cache_away)
    settings.DEBUG = True
    token = log_out_with_a_token(settings, api_key)
    assert "result" in post_rpc(json.dumps(envelope("auth")), token)
    assert "could not end the token on logout" in caplog.text
    assert token not in caplog.text
