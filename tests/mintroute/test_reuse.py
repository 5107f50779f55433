"""A remembered token belongs to one login: after a logout, a new login or a password change
the route mints afresh; and any user key (integer, UUID, string) can be remembered."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.test import Client

from mintroute.reuse import TOKEN_COOKIE, TOKEN_COOKIE_SALT
from tests.mintroute.conftest import logged_in_browser, post_token, upstream_calls
from tests.mintroute.test_authentication import DEVICE, app_call


def test_a_new_login_of_the_same_user_mints_afresh(site_key: str) -> None:
    browser = logged_in_browser()
    first = post_token(browser).json()["token"]
    browser.post("/accounts/logout/", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    browser.force_login(User.objects.get(username="alice"))
    browser.get("/accounts/login/")
    assert post_token(browser).json()["token"] != first
    assert upstream_calls(site_key) == 2


def log_in_with_the_form(browser: Client, username: str = "alice", password: str = "pw") -> None:  # noqa: S107
    response = browser.post(
        "/accounts/login/",
        {"username": username, "password": password},
        HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value,
    )
    assert response.status_code == 302, response.content


def test_the_same_user_logging_in_again_without_logging_out_mints_afresh(site_key: str) -> None:
    browser = logged_in_browser()
    log_in_with_the_form(browser)
    session_key = browser.cookies["sessionid"].value
    first = post_token(browser).json()["token"]
    assert post_token(browser).json()["token"] == first  # the same login reuses its token
    log_in_with_the_form(browser)  # Django keeps the session key: same user, same password hash
    assert browser.cookies["sessionid"].value == session_key
    assert post_token(browser).json()["token"] != first
    assert upstream_calls(site_key) == 2


def test_after_logout_the_token_is_not_given_to_anyone(site_key: str) -> None:
    browser = logged_in_browser()
    post_token(browser)
    browser.post("/accounts/logout/", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert post_token(browser).status_code == 401


def test_a_password_change_mints_afresh(settings: Any, site_key: str) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [DEVICE]  # the credential survives the change: only the password differs
    user = User.objects.create_user("phone-owner", password="pw")
    jar = Client(enforce_csrf_checks=True)
    first = app_call(jar).json()["token"]
    assert app_call(jar).json()["token"] == first
    user.set_password("a-new-password")
    user.save()
    assert app_call(jar).json()["token"] != first
    assert upstream_calls(site_key) == 2


def test_the_cookie_is_signed_over_the_login_not_the_raw_session_key() -> None:
    browser = logged_in_browser()
    post_token(browser)
    cookie = browser.cookies["sports_token"].value
    assert browser.cookies["sessionid"].value not in cookie


def test_a_token_that_cannot_be_remembered_is_answered_anyway(
    browser: Client, monkeypatch: Any, site_key: str, caplog: Any
) -> None:
    from mintroute import views

    def broken(*args: Any) -> None:
        raise TypeError("Object of type UUID is not JSON serializable")  # the failure of issue 21

    monkeypatch.setattr(views, "remember", broken)
    response = post_token(browser)
    assert response.status_code == 200
    assert set(response.json()) == {"token", "expiresAt"}
    assert upstream_calls(site_key) == 1
    assert "could not be remembered" in caplog.text


def test_logging_out_deletes_the_token_cookie(site_key: str) -> None:
    browser = logged_in_browser()
    post_token(browser)
    assert browser.cookies["sports_token"].value
    response = browser.post("/accounts/logout/", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert response.cookies["sports_token"].value == ""
    assert response.cookies["sports_token"]["max-age"] == 0


def test_a_logout_without_a_token_cookie_sets_no_cookie() -> None:
    browser = logged_in_browser()
    response = browser.post("/accounts/logout/", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert "sports_token" not in response.cookies


def test_a_remembered_token_without_a_utc_offset_is_minted_afresh_never_a_500(site_key: str) -> None:
    # A cookie written before the SDK refused such a time (or by another release) must cost no call.
    browser = logged_in_browser()
    first = post_token(browser)
    reading = HttpRequest()
    reading.COOKIES = {TOKEN_COOKIE: browser.cookies[TOKEN_COOKIE].value}
    record = json.loads(reading.get_signed_cookie(TOKEN_COOKIE, salt=TOKEN_COOKIE_SALT))
    record["expiresAt"] = "2999-01-01T00:00:00"
    writing = HttpResponse()
    writing.set_signed_cookie(TOKEN_COOKIE, json.dumps(record), salt=TOKEN_COOKIE_SALT)
    browser.cookies[TOKEN_COOKIE] = writing.cookies[TOKEN_COOKIE].value
    again = post_token(browser)
    assert again.status_code == 200, again.content
    assert again.json()["token"] != first.json()["token"]
    assert upstream_calls(site_key) == 2
