"""Every row of the mint route's table under an ASGI server: uvicorn serving config.asgi on a
real socket (same process, so the same test database and clock), called over HTTP with httpx2.

Django resolves the route to its async entry there (mintroute.urls), which waits for the service
with the SDK's async client; test_views.py drives the same rows through the WSGI entry. Every row
runs in both SPORTS_TOKEN_SHARING modes (the `sharing` fixture).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.test import Client

from mintroute import views
from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.models import ApiKey
from tests.mintroute.conftest import upstream_calls
from tests.mintroute.test_authentication import DEVICE
from tests.upstreams import closed_port_url, fake_upstream, http_response

TIMEOUT = 10

pytestmark = pytest.mark.usefixtures("sharing")


@pytest.fixture
def site(asgi_server: str) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=f"http://{asgi_server}", timeout=TIMEOUT) as client:
        yield client


def logged_in(site: httpx2.Client, username: str = "alice") -> httpx2.Client:
    """`site` with a session of `username` and the CSRF cookie, as a page leaves a browser."""
    session = Client()
    session.force_login(User.objects.filter(username=username).first() or User.objects.create_user(username))
    site.cookies.set("sessionid", session.cookies["sessionid"].value)
    site.get("/accounts/login/")  # sets csrftoken
    return site


def mint(site: httpx2.Client, body: Any = None, *, csrf: bool = True, **headers: str) -> httpx2.Response:
    if csrf and "csrftoken" in site.cookies:
        headers.setdefault("X-CSRFToken", site.cookies["csrftoken"])
    content = body if isinstance(body, str) else json.dumps(body) if body is not None else ""
    return site.post("/api/sports-token", content=content, headers={"Content-Type": "application/json", **headers})


def refused(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    assert body["message"]
    assert response.headers["Cache-Control"] == "no-store"
    return body


@pytest.fixture
def no_sync_mint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any call of the WSGI entry's mint fails the test: under ASGI only the async one may run."""

    def forbidden(ttl: int) -> Any:
        raise AssertionError("the sync mint ran under ASGI")

    monkeypatch.setattr(views, "mint_upstream", forbidden)


def test_success_is_200_from_the_async_entry(site: httpx2.Client, no_sync_mint: None, site_key: str) -> None:
    response = mint(logged_in(site))
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"token", "expiresAt"}
    assert response.headers["Cache-Control"] == "no-store"
    assert site_key not in response.text


def test_reuse_answers_the_remembered_token_without_an_upstream_call(site: httpx2.Client, site_key: str) -> None:
    logged_in(site)
    tokens = {mint(site).json()["token"] for _ in range(3)}
    assert len(tokens) == 1
    assert upstream_calls(site_key) == 1
    assert mint(site, {"reason": "unauthorized"}).json()["token"] not in tokens


def test_not_logged_in_is_401_never_a_redirect(site: httpx2.Client) -> None:
    response = mint(site)
    refused(response, 401, "not_authenticated")
    assert response.headers["WWW-Authenticate"] == "Session"


def test_a_missing_csrf_token_is_403(site: httpx2.Client) -> None:
    refused(mint(logged_in(site), csrf=False), 403, "csrf_failed")


def test_the_permission_hook_refuses_with_403(site: httpx2.Client, settings: Any) -> None:
    settings.SPORTS_TOKEN_PERMISSION = lambda request: False
    refused(mint(logged_in(site)), 403, "forbidden")


@pytest.mark.parametrize("body", ["[]", "not json", '{"reason": "bogus"}'])
def test_a_body_that_is_not_a_json_object_is_400(site: httpx2.Client, body: str) -> None:
    refused(mint(logged_in(site), body), 400, "bad_request")


def test_the_11th_mint_in_a_minute_is_429_with_retry_after(site: httpx2.Client) -> None:
    logged_in(site)
    for _ in range(10):
        assert mint(site, {"reason": "unauthorized"}).status_code == 200
    response = mint(site, {"reason": "unauthorized"})
    refused(response, 429, "rate_limited")
    assert 1 <= int(response.headers["Retry-After"]) <= 60


def test_a_revoked_key_is_502_upstream_unauthorized(site: httpx2.Client, site_key: str) -> None:
    ApiKey.objects.get(secret_hash=hash_secret(site_key)).revoke()
    response = mint(logged_in(site))
    refused(response, 502, "upstream_unauthorized")
    assert site_key not in response.text


def test_another_upstream_error_is_502(site: httpx2.Client, settings: Any) -> None:
    envelope = {"jsonrpc": "2.0", "id": None, "error": {"code": "internal_error", "message": "Boom."}}
    with fake_upstream(lambda body: http_response(json.dumps(envelope).encode())) as url:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", url
        refused(mint(logged_in(site)), 502, "upstream_error")


def test_upstream_garbage_is_502(site: httpx2.Client, settings: Any) -> None:
    with fake_upstream(lambda body: http_response(b"<h1>502</h1>", content_type="text/html")) as url:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", url
        refused(mint(logged_in(site)), 502, "upstream_error")


def test_an_unreachable_upstream_is_503(site: httpx2.Client, settings: Any) -> None:
    settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", closed_port_url()
    refused(mint(logged_in(site)), 503, "upstream_unavailable")


def test_an_upstream_that_never_answers_is_504(site: httpx2.Client, settings: Any) -> None:
    with fake_upstream(lambda body: None) as url:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL, settings.SPORTS_TIMEOUT = "http", url, 0.5
        refused(mint(logged_in(site)), 504, "upstream_timeout")


def test_upstream_rate_limited_is_503_with_the_services_wait(site: httpx2.Client, settings: Any) -> None:
    envelope = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": "rate_limited", "message": "Spent.", "data": {"retryAfter": 4.5}},
    }
    with fake_upstream(lambda body: http_response(json.dumps(envelope).encode())) as url:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", url
        response = mint(logged_in(site))
    refused(response, 503, "upstream_rate_limited")
    assert response.headers["Retry-After"] == "5"


def test_an_unreachable_rate_limit_store_fails_closed(site: httpx2.Client, settings: Any) -> None:
    logged_in(site)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": closed_port_url().replace("http://", "redis://"),
        }
    }
    refused(mint(site), 503, "rate_limit_unavailable")


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_other_methods_are_405_with_allow_post(site: httpx2.Client, method: str) -> None:
    response = site.request(method, "/api/sports-token")
    refused(response, 405, "method_not_allowed")
    assert response.headers["Allow"] == "POST"


def test_a_token_authenticated_app_needs_no_csrf(site: httpx2.Client, settings: Any, no_sync_mint: None) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [DEVICE]
    User.objects.create_user("phone-owner")
    assert mint(site, csrf=False, Authorization="Device phone-owner").status_code == 200
    wrong = mint(site, csrf=False, Authorization="Device stranger")
    refused(wrong, 401, "not_authenticated")
    assert wrong.headers["WWW-Authenticate"] == "Device"


def test_a_site_with_atomic_requests_still_mints(
    site: httpx2.Client, monkeypatch: pytest.MonkeyPatch, no_sync_mint: None
) -> None:
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)  # Django refuses async views then
    assert mint(logged_in(site)).status_code == 200


def test_an_async_permission_hook_is_awaited(site: httpx2.Client, settings: Any) -> None:
    async def deny(request: Any) -> bool:
        return False

    settings.SPORTS_TOKEN_PERMISSION = deny
    refused(mint(logged_in(site)), 403, "forbidden")


def test_a_body_past_djangos_upload_limit_is_400_json(site: httpx2.Client, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    refused(mint(logged_in(site), {"reason": "refresh", "pad": "x" * 5000}), 400, "bad_request")


def test_an_authentication_class_that_raises_is_503_authentication_unavailable(
    site: httpx2.Client, settings: Any
) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = ["tests.mintroute.failing_auth.BrokenAuthentication"]
    response = mint(site, csrf=False, Authorization="Device phone-owner")
    refused(response, 503, "authentication_unavailable")
    assert response.headers["Retry-After"]


def test_basic_credentials_need_the_csrf_token_under_asgi_too(site: httpx2.Client, settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = ["rest_framework.authentication.BasicAuthentication"]
    User.objects.create_user("alice", password="pw")
    basic = "Basic " + base64.b64encode(b"alice:pw").decode()
    refused(mint(site, csrf=False, Authorization=basic), 403, "csrf_failed")
    site.get("/accounts/login/")  # the page's CSRF cookie
    assert mint(site, Authorization=basic).status_code == 200
