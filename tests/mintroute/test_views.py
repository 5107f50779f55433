"""The mint route's table (docs/mint-route.md, "Answers"), written once: each test is a row, run
against both entries (the `entry` fixture: "wsgi", Django's test client with real sessions and CSRF;
"asgi", uvicorn on a real socket, where Django calls the async entry and the sync mint is rigged to
fail), in both SPORTS_TOKEN_SHARING modes (the `sharing` fixture) unless a row is about "login"
mode alone (login_mode_only) or needs what only the test client can do (wsgi_only).

Behaviour that is not a row of the table is tested in the file of its module (test_reuse.py,
test_sharing.py, test_ridethrough.py, ...).
"""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any

import jwt
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test.utils import CaptureQueriesContext

from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import ApiKey
from tests.mintroute.conftest import login_mode_only, upstream_calls, wsgi_only
from tests.mintroute.entries import Entry, assert_refusal
from tests.mintroute.test_authentication import DEVICE
from tests.upstreams import closed_port_url, fake_upstream, http_response

pytestmark = pytest.mark.usefixtures("sharing")


def test_a_logged_in_browser_gets_a_token(entry: Entry, site_key: str) -> None:
    response = entry.browser().mint()
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"token", "expiresAt"}
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"
    claims = jwt.decode(
        body["token"],
        settings.SPORTS_SANDBOX_SIGNING_KEY,
        algorithms=["HS256"],
        audience="sports-sdk",
        options={"verify_exp": False},  # the sandbox clock is frozen in the past
    )
    assert claims["exp"] - claims["iat"] == 600
    assert body["expiresAt"] == "2026-03-14T15:19:26+00:00"
    assert site_key not in response.text


def test_the_ttl_comes_from_the_setting(entry: Entry, settings: Any) -> None:
    settings.SPORTS_TOKEN_TTL = 90
    claims = jwt.decode(entry.browser().mint().json()["token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 90


@pytest.mark.parametrize("reason", ["initial", "refresh", "reconnect", "unauthorized"])
def test_every_documented_reason_is_accepted(entry: Entry, reason: str) -> None:
    assert entry.browser().mint(json.dumps({"reason": reason})).status_code == 200


def test_an_anonymous_caller_gets_401_json_not_a_redirect(entry: Entry) -> None:
    response = entry.anonymous().mint()
    assert_refusal(response, 401, "not_authenticated")
    assert response.headers["WWW-Authenticate"] == "Session"


def test_a_missing_csrf_token_is_403_csrf_failed(entry: Entry) -> None:
    assert_refusal(entry.browser().mint(csrf=False), 403, "csrf_failed")


def test_a_wrong_csrf_token_is_403_csrf_failed(entry: Entry) -> None:
    assert_refusal(entry.browser().mint(headers={"X-CSRFToken": "x" * 32}), 403, "csrf_failed")


def test_the_permission_hook_can_refuse(entry: Entry, settings: Any) -> None:
    settings.SPORTS_TOKEN_PERMISSION = lambda request: request.user.username == "somebody-else"
    assert_refusal(entry.browser().mint(), 403, "forbidden")


def test_the_permission_hook_sees_the_request(entry: Entry, settings: Any) -> None:
    seen: list[str] = []
    settings.SPORTS_TOKEN_PERMISSION = lambda request: seen.append(request.user.username) or True
    assert entry.browser().mint().status_code == 200
    assert seen == ["alice"]


def test_a_permission_hook_that_raises_refuses(entry: Entry, settings: Any, caplog: Any) -> None:
    def broken(request: Any) -> bool:
        raise RuntimeError("hook bug")

    settings.SPORTS_TOKEN_PERMISSION = broken
    browser = entry.browser()
    with caplog.at_level(logging.ERROR):
        assert_refusal(browser.mint(), 403, "forbidden")
    assert "hook bug" in caplog.text


def test_an_async_permission_hook_is_awaited_not_taken_for_yes(entry: Entry, settings: Any) -> None:
    async def deny(request: Any) -> bool:
        return False

    async def allow(request: Any) -> bool:
        return True

    browser = entry.browser()
    settings.SPORTS_TOKEN_PERMISSION = deny
    assert_refusal(browser.mint(), 403, "forbidden")
    settings.SPORTS_TOKEN_PERMISSION = allow
    assert browser.mint().status_code == 200


@pytest.mark.parametrize(
    "body", ["[]", "1", '"refresh"', "null", "not json", "{", '{"reason": "bogus"}', '{"reason": 1}']
)
def test_a_body_that_is_not_a_json_object_is_400(entry: Entry, body: str) -> None:
    assert_refusal(entry.browser().mint(body), 400, "bad_request")


def test_an_oversize_body_is_400(entry: Entry) -> None:
    body = json.dumps({"reason": "refresh", "pad": "x" * 5000})
    assert_refusal(entry.browser().mint(body), 400, "bad_request")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", "reason=refresh"),
        (
            "multipart/form-data; boundary=B",
            '--B\r\nContent-Disposition: form-data; name="reason"\r\n\r\nrefresh\r\n--B--\r\n',
        ),
    ],
)
def test_a_form_encoded_body_is_400(entry: Entry, content_type: str, body: str) -> None:
    assert_refusal(entry.browser().mint(body, content_type=content_type), 400, "bad_request")


def test_a_body_past_djangos_upload_limit_is_400_json(entry: Entry, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    body = assert_refusal(
        entry.browser().mint(json.dumps({"reason": "refresh", "pad": "x" * 5000})), 400, "bad_request"
    )
    assert "larger than" in body["message"]


def test_an_empty_body_and_unknown_members_are_fine(entry: Entry) -> None:
    browser = entry.browser()
    assert browser.mint("").status_code == 200
    assert browser.mint('{"reason": "refresh", "tab": 3}').status_code == 200


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "options"])
def test_other_methods_are_405_with_allow_post(entry: Entry, method: str) -> None:
    for caller in (entry.browser(), entry.anonymous()):
        response = caller.request(method)
        assert_refusal(response, 405, "method_not_allowed")
        assert response.headers["Allow"] == "POST"


def test_the_11th_call_in_a_minute_is_429_with_retry_after(entry: Entry, site_key: str) -> None:
    browser = entry.browser()
    for _ in range(10):
        assert browser.mint('{"reason": "unauthorized"}').status_code == 200
    calls_before = upstream_calls(site_key)
    response = browser.mint('{"reason": "unauthorized"}')
    assert_refusal(response, 429, "rate_limited")
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert upstream_calls(site_key) == calls_before  # the limit is checked before any upstream call


def test_the_limit_resets_with_the_window(entry: Entry, one_clock: ManualClock) -> None:
    browser = entry.browser()
    for _ in range(10):
        browser.mint()
    response = browser.mint()
    assert response.status_code == 429
    one_clock.advance(int(response.headers["Retry-After"]))
    assert browser.mint().status_code == 200


# In "site" mode the per-IP limit counts only requests that reach the single flight (test_sharing.py).
@login_mode_only
@wsgi_only  # a caller from another address: only the test client can choose REMOTE_ADDR
def test_a_second_user_from_the_same_ip_is_limited_by_the_ip_limit(entry: Entry) -> None:
    first = entry.browser("alice")
    for _ in range(10):
        assert first.mint().status_code == 200
    body = assert_refusal(entry.browser("bob").mint(), 429, "rate_limited")
    assert "client IP" in body["message"]
    assert entry.browser("carol", REMOTE_ADDR="10.9.8.7").mint().status_code == 200


# In "site" mode the per-IP limit counts only requests that reach the single flight (test_sharing.py).
@login_mode_only
def test_x_forwarded_for_is_ignored_without_trusted_proxies(entry: Entry) -> None:
    first = entry.browser("alice")
    for _ in range(10):
        first.mint()
    assert entry.browser("mallory").mint(headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 429


# In "site" mode the per-IP limit counts only requests that reach the single flight (test_sharing.py).
@login_mode_only
def test_behind_a_trusted_proxy_each_client_ip_has_its_own_limit(entry: Entry, settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    first = entry.browser("alice")
    for _ in range(10):
        first.mint(headers={"X-Forwarded-For": "198.51.100.1"})
    second = entry.browser("bob")
    assert second.mint(headers={"X-Forwarded-For": "198.51.100.1"}).status_code == 429
    assert second.mint(headers={"X-Forwarded-For": "spoofed, 198.51.100.2"}).status_code == 200


def test_an_unreachable_rate_limit_store_fails_closed_with_503(entry: Entry, settings: Any) -> None:
    browser = entry.browser()
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": closed_port_url().replace("http://", "redis://"),
        }
    }
    body = assert_refusal(browser.mint(), 503, "rate_limit_unavailable")
    assert "cache" in body["message"]


def test_calls_within_half_the_ttl_reuse_the_token_without_an_upstream_call(
    entry: Entry, site_key: str, one_clock: ManualClock
) -> None:
    browser = entry.browser()
    tokens = {browser.mint().json()["token"] for _ in range(5)}
    assert upstream_calls(site_key) == 1
    one_clock.advance(299)  # into a later minute, whose count starts at 0
    tokens.add(browser.mint().json()["token"])
    tokens.add(entry.second_tab(browser).mint().json()["token"])
    assert len(tokens) == 1
    assert upstream_calls(site_key) == 0


def test_a_token_past_half_its_life_is_replaced(entry: Entry, one_clock: ManualClock, site_key: str) -> None:
    browser = entry.browser()
    first = browser.mint().json()["token"]
    one_clock.advance(300)
    assert browser.mint().json()["token"] != first
    assert upstream_calls(site_key) == 1  # this minute's one call: the new mint


def test_reason_unauthorized_always_mints_afresh(entry: Entry, site_key: str) -> None:
    browser = entry.browser()
    first = browser.mint().json()["token"]
    second = browser.mint('{"reason": "unauthorized"}').json()["token"]
    assert second != first
    assert browser.mint().json()["token"] == second
    assert upstream_calls(site_key) == 2


@login_mode_only
def test_another_session_gets_its_own_token(entry: Entry) -> None:
    first = entry.browser("alice").mint().json()["token"]
    second = entry.browser("bob").mint().json()["token"]
    assert first != second


@login_mode_only
def test_the_reusable_token_is_kept_in_a_signed_httponly_cookie(entry: Entry) -> None:
    response = entry.browser().mint()
    cookie = response.cookie("sports_token")
    assert cookie["httponly"]
    assert cookie["samesite"] == "Strict"
    assert int(cookie["max-age"]) == 600
    assert not response.sets_cookie("sessionid")  # minting writes nothing to the session


@login_mode_only
def test_a_tampered_or_foreign_token_cookie_is_not_reused(entry: Entry) -> None:
    browser = entry.browser()
    first = browser.mint().json()["token"]
    browser.set_cookie("sports_token", browser.get_cookie("sports_token").replace("a", "b", 1) + "x")
    assert browser.mint().json()["token"] != first
    alice_cookie = browser.get_cookie("sports_token")
    mallory = entry.browser("mallory")
    mallory.set_cookie("sports_token", alice_cookie)  # signed, but for another user
    assert mallory.mint().json()["token"] not in {first, browser.mint().json()["token"]}


def test_a_revoked_key_is_502_upstream_unauthorized(entry: Entry, site_key: str, caplog: Any, settings: Any) -> None:
    settings.DEBUG = True  # names the setting for the developer; tests/mintroute/test_production_answers.py
    ApiKey.objects.get(secret_hash=hash_secret(site_key)).revoke()
    browser = entry.browser()
    with caplog.at_level(logging.WARNING):
        response = browser.mint()
    body = assert_refusal(response, 502, "upstream_unauthorized")
    assert "SPORTS_API_KEY" in body["message"]
    assert site_key not in response.text
    assert "unauthorized" in caplog.text
    assert site_key not in caplog.text


def test_a_missing_key_is_502_upstream_unauthorized_naming_sandbox_key(entry: Entry, settings: Any) -> None:
    settings.DEBUG = True
    settings.SPORTS_API_KEY = ""
    body = assert_refusal(entry.browser().mint(), 502, "upstream_unauthorized")
    assert "sandbox_key create" in body["message"]


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
    entry: Entry, settings: Any, setting: str, value: object, named: str
) -> None:
    browser = entry.browser()
    settings.DEBUG = True
    settings.SPORTS_BASE_URL = ""
    setattr(settings, setting, value)
    body = assert_refusal(browser.mint(), 502, "upstream_error")
    assert named in body["message"]


def test_the_sandbox_transport_without_the_sandbox_app_is_a_502(entry: Entry, settings: Any) -> None:
    browser = entry.browser()
    settings.DEBUG = True
    settings.SPORTS_TRANSPORT = "sandbox"
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "sportsproxy.sandbox"]
    body = assert_refusal(browser.mint(), 502, "upstream_error")
    assert "INSTALLED_APPS" in body["message"]


def test_a_base_url_with_a_stray_tab_is_a_502_naming_it_never_a_500(entry: Entry, settings: Any, site_key: str) -> None:
    browser = entry.browser()
    settings.DEBUG = True
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = "http://127.0.0.1:8000\t"
    response = browser.mint()
    body = assert_refusal(response, 502, "upstream_error")
    assert "SPORTS_BASE_URL" in body["message"]
    assert site_key not in response.text


def test_another_upstream_error_is_502_upstream_error(entry: Entry, settings: Any, caplog: Any) -> None:
    browser = entry.browser()
    envelope = {"jsonrpc": "2.0", "id": None, "error": {"code": "internal_error", "message": "Boom."}}
    with fake_upstream(lambda body: http_response(json.dumps(envelope).encode())) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        with caplog.at_level(logging.WARNING):
            body = assert_refusal(browser.mint(), 502, "upstream_error")
    assert "internal_error" in body["message"]
    assert "internal_error" in caplog.text


def test_upstream_garbage_is_502_upstream_error(entry: Entry, settings: Any) -> None:
    browser = entry.browser()
    with fake_upstream(lambda body: http_response(b"<h1>502</h1>", content_type="text/html")) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        assert_refusal(browser.mint(), 502, "upstream_error")


def test_an_expiry_without_a_utc_offset_is_502_upstream_error_and_no_later_call_fails(
    entry: Entry, settings: Any
) -> None:
    def naive(body: bytes) -> bytes:
        result = {"token": "a.b.c", "expiresAt": "2026-03-14T15:19:26"}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": result}).encode())

    browser = entry.browser()
    with fake_upstream(naive) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        assert_refusal(browser.mint(), 502, "upstream_error")
        assert_refusal(browser.mint(), 502, "upstream_error")  # nothing was kept from the first
    settings.SPORTS_TRANSPORT = "sandbox"
    settings.SPORTS_BASE_URL = ""
    for _ in range(2):  # a mint, then (login mode) its reuse
        answer = browser.mint()
        assert answer.status_code == 200, answer.text
        assert answer.json()["expiresAt"].endswith("+00:00")


def test_a_mint_that_fails_unexpectedly_is_502_upstream_error_and_the_next_one_mints(
    entry: Entry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Whatever the mint raises besides the SDK's errors (a transport of the wrong library, a bug) is a
    # logged 502, never a 500; in "site" mode its lock is released, so the next caller mints at once.
    from mintroute import minting

    def broken() -> Any:
        raise RuntimeError("a bug beneath the mint")

    browser = entry.browser()
    with monkeypatch.context() as patched:
        patched.setattr(minting, "get_client", broken)
        patched.setattr(minting, "get_async_client", broken)
        assert_refusal(browser.mint(), 502, "upstream_error")
    assert "a bug beneath the mint" in caplog.text  # with its traceback
    started = time.monotonic()
    assert browser.mint(json.dumps({"reason": "unauthorized"})).status_code == 200
    assert time.monotonic() - started < 5  # nobody waited for a lock the failed mint kept


def test_upstream_rate_limited_is_503_with_the_services_wait(entry: Entry, settings: Any) -> None:
    browser = entry.browser()
    envelope = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": "rate_limited", "message": "Spent.", "data": {"retryAfter": 4.5}},
    }
    with fake_upstream(lambda body: http_response(json.dumps(envelope).encode())) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        response = browser.mint()
    assert_refusal(response, 503, "upstream_rate_limited")
    assert response.headers["Retry-After"] == "5"


def test_an_unreachable_upstream_is_503(entry: Entry, settings: Any) -> None:
    browser = entry.browser()
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = closed_port_url()
    response = browser.mint()
    assert_refusal(response, 503, "upstream_unavailable")
    assert response.headers["Retry-After"] == "5"


def test_an_upstream_that_never_answers_is_504(entry: Entry, settings: Any) -> None:
    browser = entry.browser()
    with fake_upstream(lambda body: None) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        settings.SPORTS_TIMEOUT = 0.5
        assert_refusal(browser.mint(), 504, "upstream_timeout")


def test_a_token_authenticated_app_needs_no_csrf(entry: Entry, settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [DEVICE]
    User.objects.create_user("phone-owner")
    app = entry.anonymous()
    assert app.mint(csrf=False, headers={"Authorization": "Device phone-owner"}).status_code == 200
    wrong = app.mint(csrf=False, headers={"Authorization": "Device stranger"})
    assert_refusal(wrong, 401, "not_authenticated")
    assert wrong.headers["WWW-Authenticate"] == "Device"


def test_basic_credentials_need_the_csrf_token(entry: Entry, settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = ["rest_framework.authentication.BasicAuthentication"]
    User.objects.create_user("alice", password="pw")
    basic = {"Authorization": "Basic " + base64.b64encode(b"alice:pw").decode()}
    caller = entry.anonymous()
    assert_refusal(caller.mint(csrf=False, headers=basic), 403, "csrf_failed")
    caller.load_csrf_cookie()  # the page's CSRF cookie
    assert caller.mint(headers=basic).status_code == 200


def test_an_authentication_class_that_raises_is_503_authentication_unavailable(entry: Entry, settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = ["tests.mintroute.failing_auth.BrokenAuthentication"]
    response = entry.anonymous().mint(csrf=False, headers={"Authorization": "Device phone-owner"})
    assert_refusal(response, 503, "authentication_unavailable")
    assert response.headers["Retry-After"] == "5"


def test_a_site_with_atomic_requests_still_mints(entry: Entry, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)  # Django refuses async views then
    browser = entry.browser()
    with CaptureQueriesContext(connection) as queries:
        assert browser.mint().status_code == 200
    # Neither entry opens a transaction: a database outage must reach the route's 503, not fail
    # Django's transaction.atomic() around the view with a 500.
    assert not [query for query in queries if "SAVEPOINT" in query["sql"]]


@wsgi_only  # Django builds an ASGI app's middleware chain once, when the server starts
def test_a_site_with_login_required_middleware_still_gets_json_rows(entry: Entry, settings: Any) -> None:
    # Django 5.1's LoginRequiredMiddleware redirects anonymous callers of any view not marked
    # login_not_required; the route answers its own 401 (and the middleware never loads the session
    # before the route, so a store outage is the route's 503, not a 500).
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.contrib.auth.middleware.LoginRequiredMiddleware"]
    assert_refusal(entry.anonymous().mint(), 401, "not_authenticated")
    assert entry.browser().mint().status_code == 200
