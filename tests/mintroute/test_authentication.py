"""SPORTS_TOKEN_AUTHENTICATION: the site chooses who may mint (DRF authentication classes).

A class that does not read the session needs no CSRF token; a request nobody authenticates is
401 `not_authenticated` with the first class's challenge; the permission hook and both rate
limits apply whichever class authenticated the request.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from mintroute.checks import check_mint_route_settings
from tests.mintroute.conftest import logged_in_browser, login_mode_only, post_token, upstream_calls
from tests.mintroute.entries import assert_refusal

pytestmark = pytest.mark.usefixtures("sharing")  # every test in both SPORTS_TOKEN_SHARING modes

DEVICE = "tests.mintroute.device_auth.DeviceAuthentication"
SESSION = "mintroute.authentication.SessionAuthentication"


@pytest.fixture
def device_only(settings: Any) -> Any:
    settings.SPORTS_TOKEN_AUTHENTICATION = [DEVICE]
    User.objects.create_user("phone-owner", password="pw")
    return settings


def app_call(client: Client | None = None, device: str | None = "phone-owner", body: str = "") -> Any:
    """A mobile app's call: a token header, no CSRF token, and (by default) no cookies."""
    headers = {"HTTP_AUTHORIZATION": f"Device {device}"} if device else {}
    return (client or Client(enforce_csrf_checks=True)).post(
        "/api/sports-token", body, content_type="application/json", **headers
    )


def test_the_default_is_the_route_session_class_by_its_dotted_path(browser: Client, settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION]
    assert post_token(browser).status_code == 200


def test_a_token_authenticated_app_needs_no_cookie_and_no_csrf(device_only: Any) -> None:
    response = app_call()
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"token", "expiresAt"}


def test_a_wrong_app_token_is_401_with_the_first_class_challenge(device_only: Any) -> None:
    response = app_call(device="stranger")
    assert_refusal(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Device"


def test_no_credential_at_all_is_401_with_the_first_class_challenge(device_only: Any) -> None:
    response = app_call(device=None)
    assert_refusal(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Device"


@pytest.mark.parametrize("listed", [[DEVICE], [DEVICE, SESSION]])
def test_an_apps_401_says_the_credential_was_missing_or_not_accepted_never_log_in(
    settings: Any, listed: list[str]
) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = listed
    for device in (None, "stranger"):
        message = assert_refusal(app_call(device=device), 401, "not_authenticated")["message"]
        assert "log in" not in message.lower()
        assert "credential was missing or not accepted" in message


def test_a_session_sites_401_still_says_log_in(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, DEVICE]
    assert "Log in" in assert_refusal(app_call(device=None), 401, "not_authenticated")["message"]


def test_a_session_is_not_enough_when_only_the_token_class_is_listed(device_only: Any) -> None:
    assert_refusal(post_token(logged_in_browser()), 401, "not_authenticated")


def test_session_and_token_classes_side_by_side(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, DEVICE]
    User.objects.create_user("phone-owner", password="pw")
    assert app_call().status_code == 200
    browser = logged_in_browser()
    assert post_token(browser).status_code == 200
    assert_refusal(post_token(browser, csrf=False), 403, "csrf_failed")  # the session still needs CSRF
    anonymous = app_call(device=None)
    assert_refusal(anonymous, 401, "not_authenticated")
    assert anonymous["WWW-Authenticate"] == "Session"  # the first listed class's


def test_the_permission_hook_sees_the_token_authenticated_user(device_only: Any) -> None:
    seen: list[str] = []
    device_only.SPORTS_TOKEN_PERMISSION = lambda request: seen.append(request.user.username) or False
    assert_refusal(app_call(), 403, "forbidden")
    assert seen == ["phone-owner"]


def test_the_rate_limits_apply_to_token_authenticated_calls(device_only: Any, site_key: str) -> None:
    for _ in range(10):
        assert app_call(body='{"reason": "unauthorized"}').status_code == 200
    calls = upstream_calls(site_key)
    response = app_call(body='{"reason": "unauthorized"}')
    assert_refusal(response, 429, "rate_limited")
    assert response["Retry-After"]
    assert upstream_calls(site_key) == calls


def test_an_app_with_a_cookie_jar_reuses_its_token(device_only: Any, site_key: str) -> None:
    jar = Client(enforce_csrf_checks=True)  # keeps cookies, as an app's HTTP client can
    first = app_call(jar).json()["token"]
    assert app_call(jar).json()["token"] == first
    assert upstream_calls(site_key) == 1


@login_mode_only
def test_another_app_credential_is_another_login(device_only: Any) -> None:
    User.objects.create_user("second-phone", password="pw")
    jar = Client(enforce_csrf_checks=True)
    first = app_call(jar).json()["token"]
    assert app_call(jar, device="second-phone").json()["token"] != first


@pytest.mark.parametrize(
    "value",
    [["nowhere.Authentication"], "mintroute.authentication.SessionAuthentication", [], [42], ["mintroute.conf"]],
)
def test_an_entry_that_cannot_be_imported_is_check_error_e005(settings: Any, value: object) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = value
    assert [message.id for message in check_mint_route_settings()] == ["mintroute.E005"]


def test_a_site_that_skipped_check_gets_a_502_naming_the_setting(browser: Client, settings: Any) -> None:
    settings.DEBUG = True
    settings.SPORTS_TOKEN_AUTHENTICATION = ["nowhere.Authentication"]
    body = assert_refusal(post_token(browser), 502, "upstream_error")
    assert "SPORTS_TOKEN_AUTHENTICATION" in body["message"]
