"""The demo app: its page, the server-rendered panel and the expire-token helper."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client


def test_the_demo_page_needs_a_login() -> None:
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_the_demo_page_has_a_strict_content_security_policy(admin_client: Client) -> None:
    response = admin_client.get("/", HTTP_HOST="localhost")
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "connect-src 'self' ws://localhost" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    page = response.content.decode()
    assert '<script type="module" src="/static/demo/demo.js">' in page
    assert 'id="client-config" type="application/json"' in page


def test_the_policy_names_the_configured_service_origins(admin_client: Client, settings: Any) -> None:
    settings.SPORTS_PUBLIC_BASE_URL = "https://api.sports.example/v1"
    settings.SPORTS_PUBLIC_WS_URL = "wss://stream.sports.example/sdk/v1/ws"
    policy = admin_client.get("/")["Content-Security-Policy"]
    assert "https://api.sports.example" in policy
    assert "wss://stream.sports.example" in policy


def test_the_page_never_shows_the_api_key(admin_client: Client, settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    page = admin_client.get("/").content.decode() + admin_client.get("/demo/server-matches").content.decode()
    assert api_key not in page
    assert api_key[8:] not in page


def test_the_server_fragment_lists_matches_with_the_api_key(admin_client: Client, settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    fragment = admin_client.get("/demo/server-matches?sports=tennis").content.decode()
    assert fragment.count("<tr>") == 9  # header and 8 matches
    assert "tennis" in fragment
    assert "basketball" not in fragment


def test_the_server_fragment_shows_an_upstream_error(admin_client: Client, settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    fragment = admin_client.get("/demo/server-matches?sports=curling").content.decode()
    assert 'class="error"' in fragment
    assert "curling" in fragment


def test_expire_token_ends_the_sessions_token_early(settings: Any, api_key: str) -> None:
    from tests.mintroute.conftest import logged_in_browser, post_token
    from tests.support import envelope, post_rpc

    settings.DEBUG = True  # the demo: debug on, sandbox mounted
    settings.SPORTS_API_KEY = api_key
    browser = logged_in_browser()
    token = post_token(browser).json()["token"]
    assert "result" in post_rpc(json.dumps(envelope("auth")), token)
    expired = browser.post("/demo/expire-token", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert expired.json() == {"expired": True}
    assert post_rpc(json.dumps(envelope("auth")), token)["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("debug", "sandbox"), [(False, True), (True, False), (False, False)], ids=["production", "real service", "both"]
)
def test_expire_token_exists_only_in_the_demo(settings: Any, api_key: str, debug: bool, sandbox: bool) -> None:
    from tests.mintroute.conftest import logged_in_browser, post_token
    from tests.support import envelope, post_rpc

    settings.SPORTS_API_KEY = api_key
    browser = logged_in_browser()
    token = post_token(browser).json()["token"]
    settings.DEBUG, settings.SPORTS_SANDBOX = debug, sandbox
    page = browser.get("/").content.decode()
    assert 'id="expire-token"' not in page
    assert '"debugHelpers": false' in page
    assert browser.post("/demo/expire-token", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value).status_code == 404
    settings.SPORTS_SANDBOX = True
    assert "result" in post_rpc(json.dumps(envelope("auth")), token)  # the token was not ended


def test_the_demo_page_offers_expire_token_in_the_demo(admin_client: Client, settings: Any) -> None:
    settings.DEBUG = True
    page = admin_client.get("/").content.decode()
    assert 'id="expire-token"' in page
    assert '"debugHelpers": true' in page


def test_the_server_panel_is_rate_limited_per_user_like_the_mint_route(settings: Any, api_key: str) -> None:
    from tests.mintroute.conftest import logged_in_browser, post_token

    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TOKEN_RATE = "3/m"
    browser = logged_in_browser()
    assert [browser.get("/demo/server-matches").status_code for _ in range(3)] == [200, 200, 200]
    refused = browser.get("/demo/server-matches")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert 'class="error"' in refused.content.decode()
    assert "server-rendered listings" in refused.content.decode()
    assert post_token(browser).status_code == 200  # the mint route counts on its own


def test_the_server_panel_fails_closed_when_the_rate_limit_store_is_down(
    admin_client: Client, settings: Any, api_key: str
) -> None:
    settings.SPORTS_API_KEY = api_key
    from tests.upstreams import closed_port_url

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": closed_port_url().replace("http://", "redis://"),
        }
    }
    refused = admin_client.get("/demo/server-matches")
    assert refused.status_code == 503
    assert "rate-limit store" in refused.content.decode()
