"""Every row of the mint route's table, through Django's test client with real sessions and CSRF,
in both SPORTS_TOKEN_SHARING modes (the `sharing` fixture) unless a test is about "login" mode alone."""

from __future__ import annotations

import json
import logging
from typing import Any

import jwt
import pytest
from django.conf import settings
from django.test import Client

from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import ApiKey
from tests.mintroute.conftest import logged_in_browser, login_mode_only, post_token, upstream_calls
from tests.upstreams import closed_port_url, fake_upstream, http_response

pytestmark = pytest.mark.usefixtures("sharing")


def assert_refusal(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    assert isinstance(body["message"], str)
    assert body["message"]
    assert response["Cache-Control"] == "no-store"
    assert response["Pragma"] == "no-cache"
    return body


def test_a_logged_in_browser_gets_a_token(browser: Client, site_key: str) -> None:
    response = post_token(browser)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "expiresAt"}
    assert response["Cache-Control"] == "no-store"
    assert response["Pragma"] == "no-cache"
    claims = jwt.decode(
        body["token"],
        settings.SPORTS_SANDBOX_SIGNING_KEY,
        algorithms=["HS256"],
        audience="sports-sdk",
        options={"verify_exp": False},  # the sandbox clock is frozen in the past
    )
    assert claims["exp"] - claims["iat"] == 600
    assert body["expiresAt"] == "2026-03-14T15:19:26+00:00"
    assert site_key not in response.content.decode()


def test_the_ttl_comes_from_the_setting(browser: Client, settings: Any) -> None:
    settings.SPORTS_TOKEN_TTL = 90
    claims = jwt.decode(post_token(browser).json()["token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 90


@pytest.mark.parametrize("reason", ["initial", "refresh", "reconnect", "unauthorized"])
def test_every_documented_reason_is_accepted(browser: Client, reason: str) -> None:
    assert post_token(browser, json.dumps({"reason": reason})).status_code == 200


def test_an_anonymous_caller_gets_401_json_not_a_redirect() -> None:
    browser = Client(enforce_csrf_checks=True)
    response = post_token(browser)
    assert_refusal(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Session"


def test_a_missing_csrf_token_is_403_csrf_failed(browser: Client) -> None:
    assert_refusal(post_token(browser, csrf=False), 403, "csrf_failed")


def test_a_wrong_csrf_token_is_403_csrf_failed(browser: Client) -> None:
    assert_refusal(post_token(browser, HTTP_X_CSRFTOKEN="x" * 32), 403, "csrf_failed")


def test_the_permission_hook_can_refuse(browser: Client, settings: Any) -> None:
    settings.SPORTS_TOKEN_PERMISSION = lambda request: request.user.username == "somebody-else"
    assert_refusal(post_token(browser), 403, "forbidden")


def test_the_permission_hook_sees_the_request(browser: Client, settings: Any) -> None:
    seen: list[str] = []
    settings.SPORTS_TOKEN_PERMISSION = lambda request: seen.append(request.user.username) or True
    assert post_token(browser).status_code == 200
    assert seen == ["alice"]


def test_a_permission_hook_that_raises_refuses(browser: Client, settings: Any, caplog: Any) -> None:
    def broken(request: Any) -> bool:
        raise RuntimeError("hook bug")

    settings.SPORTS_TOKEN_PERMISSION = broken
    with caplog.at_level(logging.ERROR):
        assert_refusal(post_token(browser), 403, "forbidden")
    assert "hook bug" in caplog.text


@pytest.mark.parametrize(
    "body", ["[]", "1", '"refresh"', "null", "not json", "{", '{"reason": "bogus"}', '{"reason": 1}']
)
def test_a_body_that_is_not_a_json_object_is_400(browser: Client, body: str) -> None:
    assert_refusal(post_token(browser, body), 400, "bad_request")


def test_an_oversize_body_is_400(browser: Client) -> None:
    assert_refusal(post_token(browser, json.dumps({"reason": "refresh", "pad": "x" * 5000})), 400, "bad_request")


def test_a_form_encoded_body_is_400(browser: Client) -> None:
    response = browser.post(
        "/api/sports-token", {"reason": "refresh"}, HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value
    )
    assert_refusal(response, 400, "bad_request")


def test_an_empty_body_and_unknown_members_are_fine(browser: Client) -> None:
    assert post_token(browser, "").status_code == 200
    assert post_token(browser, '{"reason": "refresh", "tab": 3}').status_code == 200


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "options"])
def test_other_methods_are_405_with_allow_post(browser: Client, method: str) -> None:
    for caller in (browser, Client()):
        response = getattr(caller, method)("/api/sports-token")
        assert_refusal(response, 405, "method_not_allowed")
        assert response["Allow"] == "POST"


def test_the_11th_call_in_a_minute_is_429_with_retry_after(site_key: str, settings: Any) -> None:
    browser = logged_in_browser()
    for _ in range(10):
        assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200
    calls_before = upstream_calls(site_key)
    response = post_token(browser, '{"reason": "unauthorized"}')
    assert_refusal(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert upstream_calls(site_key) == calls_before  # the limit is checked before any upstream call


def test_the_limit_resets_with_the_window(browser: Client, one_clock: ManualClock) -> None:
    for _ in range(10):
        post_token(browser)
    response = post_token(browser)
    assert response.status_code == 429
    one_clock.advance(int(response["Retry-After"]))
    assert post_token(browser).status_code == 200


def test_a_second_user_from_the_same_ip_is_limited_by_the_ip_limit() -> None:
    first = logged_in_browser("alice")
    for _ in range(10):
        assert post_token(first).status_code == 200
    second = logged_in_browser("bob")
    body = assert_refusal(post_token(second), 429, "rate_limited")
    assert "client IP" in body["message"]
    elsewhere = logged_in_browser("carol", REMOTE_ADDR="10.9.8.7")
    assert post_token(elsewhere).status_code == 200


def test_x_forwarded_for_is_ignored_without_trusted_proxies() -> None:
    first = logged_in_browser("alice")
    for _ in range(10):
        post_token(first)
    spoofing = logged_in_browser("mallory")
    assert post_token(spoofing, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 429


def test_behind_a_trusted_proxy_each_client_ip_has_its_own_limit(settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    first = logged_in_browser("alice")
    for _ in range(10):
        post_token(first, HTTP_X_FORWARDED_FOR="198.51.100.1")
    second = logged_in_browser("bob")
    assert post_token(second, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429
    assert post_token(second, HTTP_X_FORWARDED_FOR="spoofed, 198.51.100.2").status_code == 200


def test_calls_within_half_the_ttl_reuse_the_token_without_an_upstream_call(
    browser: Client, site_key: str, one_clock: ManualClock
) -> None:
    tokens = {post_token(browser).json()["token"] for _ in range(5)}
    assert upstream_calls(site_key) == 1
    one_clock.advance(299)  # into a later minute, whose count starts at 0
    tokens.add(post_token(browser).json()["token"])
    second_tab = Client(enforce_csrf_checks=True)
    second_tab.cookies = browser.cookies
    tokens.add(post_token(second_tab).json()["token"])
    assert len(tokens) == 1
    assert upstream_calls(site_key) == 0


def test_a_token_past_half_its_life_is_replaced(browser: Client, one_clock: ManualClock, site_key: str) -> None:
    first = post_token(browser).json()["token"]
    one_clock.advance(300)
    assert post_token(browser).json()["token"] != first
    assert upstream_calls(site_key) == 1  # this minute's one call: the new mint


def test_reason_unauthorized_always_mints_afresh(browser: Client, site_key: str) -> None:
    first = post_token(browser).json()["token"]
    second = post_token(browser, '{"reason": "unauthorized"}').json()["token"]
    assert second != first
    assert post_token(browser).json()["token"] == second
    assert upstream_calls(site_key) == 2


@login_mode_only
def test_another_session_gets_its_own_token(site_key: str) -> None:
    first = post_token(logged_in_browser("alice")).json()["token"]
    second = post_token(logged_in_browser("bob")).json()["token"]
    assert first != second


def test_a_revoked_key_is_502_upstream_unauthorized(browser: Client, site_key: str, caplog: Any, settings: Any) -> None:
    settings.DEBUG = True  # names the setting for the developer; tests/mintroute/test_production_answers.py
    ApiKey.objects.get(secret_hash=hash_secret(site_key)).revoke()
    with caplog.at_level(logging.WARNING):
        response = post_token(browser)
    body = assert_refusal(response, 502, "upstream_unauthorized")
    assert "SPORTS_API_KEY" in body["message"]
    assert site_key not in response.content.decode()
    assert "unauthorized" in caplog.text
    assert site_key not in caplog.text


def test_a_missing_key_is_502_upstream_unauthorized_naming_demo_setup(browser: Client, settings: Any) -> None:
    settings.DEBUG = True
    settings.SPORTS_API_KEY = ""
    body = assert_refusal(post_token(browser), 502, "upstream_unauthorized")
    assert "demo_setup" in body["message"]


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [
        ("SPORTS_TOKEN_TTL", 59, "SPORTS_TOKEN_TTL"),
        ("SPORTS_TRANSPORT", "http", "SPORTS_BASE_URL"),  # and SPORTS_BASE_URL left empty
        ("SPORTS_TRANSPORT", "pigeon", "SPORTS_TRANSPORT"),
        ("SPORTS_TIMEOUT", "soon", "SPORTS_TIMEOUT"),
    ],
)
def test_a_site_that_skipped_check_gets_a_502_naming_the_setting_never_a_500(
    browser: Client, settings: Any, setting: str, value: object, named: str
) -> None:
    settings.DEBUG = True
    settings.SPORTS_BASE_URL = ""
    setattr(settings, setting, value)
    body = assert_refusal(post_token(browser), 502, "upstream_error")
    assert named in body["message"]


def test_the_sandbox_transport_without_the_sandbox_app_is_a_502(browser: Client, settings: Any) -> None:
    settings.DEBUG = True
    settings.SPORTS_TRANSPORT = "sandbox"
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "sportsproxy.sandbox"]
    body = assert_refusal(post_token(browser), 502, "upstream_error")
    assert "INSTALLED_APPS" in body["message"]


def test_another_upstream_error_is_502_upstream_error(browser: Client, settings: Any, caplog: Any) -> None:
    envelope = {"jsonrpc": "2.0", "id": None, "error": {"code": "internal_error", "message": "Boom."}}
    with fake_upstream(lambda body: http_response(json.dumps(envelope).encode())) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        with caplog.at_level(logging.WARNING):
            body = assert_refusal(post_token(browser), 502, "upstream_error")
    assert "internal_error" in body["message"]
    assert "internal_error" in caplog.text


def test_upstream_garbage_is_502_upstream_error(browser: Client, settings: Any) -> None:
    with fake_upstream(lambda body: http_response(b"<h1>502</h1>", content_type="text/html")) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        assert_refusal(post_token(browser), 502, "upstream_error")


def test_an_unreachable_upstream_is_503(browser: Client, settings: Any) -> None:
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = closed_port_url()
    assert_refusal(post_token(browser), 503, "upstream_unavailable")


def test_an_upstream_that_never_answers_is_504(browser: Client, settings: Any) -> None:
    with fake_upstream(lambda body: None) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        settings.SPORTS_TIMEOUT = 0.5
        assert_refusal(post_token(browser), 504, "upstream_timeout")


def test_an_unreachable_rate_limit_store_fails_closed_with_503(browser: Client, settings: Any, site_key: str) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": closed_port_url().replace("http://", "redis://"),
        }
    }
    body = assert_refusal(post_token(browser), 503, "rate_limit_unavailable")
    assert "cache" in body["message"]


@login_mode_only
def test_the_reusable_token_is_kept_in_a_signed_httponly_cookie(browser: Client) -> None:
    response = post_token(browser)
    cookie = response.cookies["sports_token"]
    assert cookie["httponly"]
    assert cookie["samesite"] == "Strict"
    assert cookie["max-age"] == 600
    assert "sessionid" not in response.cookies  # minting writes nothing to the session


@login_mode_only
def test_a_tampered_or_foreign_token_cookie_is_not_reused(browser: Client, site_key: str) -> None:
    first = post_token(browser).json()["token"]
    browser.cookies["sports_token"] = browser.cookies["sports_token"].value.replace("a", "b", 1) + "x"
    assert post_token(browser).json()["token"] != first
    alice_cookie = browser.cookies["sports_token"].value
    mallory = logged_in_browser("mallory")
    mallory.cookies["sports_token"] = alice_cookie  # signed, but for another user
    assert post_token(mallory).json()["token"] not in {first, post_token(browser).json()["token"]}


def test_an_async_permission_hook_is_awaited_not_taken_for_yes(browser: Client, settings: Any) -> None:
    async def deny(request: Any) -> bool:
        return False

    async def allow(request: Any) -> bool:
        return True

    settings.SPORTS_TOKEN_PERMISSION = deny
    assert_refusal(post_token(browser), 403, "forbidden")
    settings.SPORTS_TOKEN_PERMISSION = allow
    assert post_token(browser).status_code == 200


def test_a_body_past_djangos_upload_limit_is_400_json(browser: Client, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    response = post_token(browser, json.dumps({"reason": "refresh", "pad": "x" * 5000}))
    body = assert_refusal(response, 400, "bad_request")
    assert "larger than" in body["message"]


def test_a_base_url_with_a_stray_tab_is_a_502_naming_it_never_a_500(
    browser: Client, settings: Any, site_key: str
) -> None:
    settings.DEBUG = True
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = "http://127.0.0.1:8000\t"
    response = post_token(browser)
    body = assert_refusal(response, 502, "upstream_error")
    assert "SPORTS_BASE_URL" in body["message"]
    assert site_key not in response.content.decode()


def test_a_site_with_login_required_middleware_still_gets_json_rows(settings: Any, browser: Client) -> None:
    # Django 5.1's LoginRequiredMiddleware redirects anonymous callers of any view not marked
    # login_not_required; the route answers its own 401 (and the middleware never loads the session
    # before the route, so a store outage is the route's 503, not a 500).
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.contrib.auth.middleware.LoginRequiredMiddleware"]
    anonymous = Client().post("/api/sports-token", "", content_type="application/json")
    assert_refusal(anonymous, 401, "not_authenticated")
    assert post_token(browser).status_code == 200
