"""CSRF for credentials a browser sends by itself: only a request authenticated from an
`Authorization` header whose scheme is not Basic, Digest or Negotiate skips the CSRF check. The
session, HTTP Basic and the web server's remote user are CSRF-checked: a forged cross-site form
that rides on them is 403 `csrf_failed`; with the page's CSRF token they mint."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from tests.mintroute.conftest import logged_in_browser, post_token
from tests.mintroute.entries import assert_refusal
from tests.mintroute.test_authentication import DEVICE, SESSION, app_call

BASIC = "rest_framework.authentication.BasicAuthentication"
DIGEST = "tests.mintroute.test_csrf_rule.DigestAuthentication"
NEGOTIATE = "tests.mintroute.test_csrf_rule.NegotiateAuthentication"
REMOTE_USER = "rest_framework.authentication.RemoteUserAuthentication"
EVIL_ORIGIN = "https://evil.example"


def basic(username: str = "alice", password: str = "pw") -> str:  # noqa: S107 - a test user's password
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def forged_form(**credentials: Any) -> Any:
    """What a cross-site page's auto-submitting form makes a browser send: its cached credentials, no token."""
    return Client(enforce_csrf_checks=True).post(
        "/api/sports-token",
        "reason=initial",
        content_type="application/x-www-form-urlencoded",
        HTTP_ORIGIN=EVIL_ORIGIN,
        **credentials,
    )


def with_the_pages_token(**credentials: Any) -> Any:
    page = Client(enforce_csrf_checks=True)
    page.get("/accounts/login/")  # the site's page sets the CSRF cookie
    return post_token(page, '{"reason": "initial"}', **credentials)


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password="pw")


@pytest.mark.parametrize("listed", [[BASIC], [SESSION, BASIC], [BASIC, SESSION]])
def test_a_forged_form_with_cached_basic_credentials_is_403_csrf_failed(
    settings: Any, alice: User, listed: list[str]
) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = listed
    assert_refusal(forged_form(HTTP_AUTHORIZATION=basic()), 403, "csrf_failed")


def test_basic_credentials_with_the_pages_csrf_token_mint(settings: Any, alice: User) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [BASIC]
    response = with_the_pages_token(HTTP_AUTHORIZATION=basic())
    assert response.status_code == 200, response.content


def test_wrong_basic_credentials_are_still_401(settings: Any, alice: User) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [BASIC]
    assert_refusal(forged_form(HTTP_AUTHORIZATION=basic(password="wrong")), 401, "not_authenticated")


@pytest.fixture
def remote_user(settings: Any, alice: User) -> Any:
    settings.SPORTS_TOKEN_AUTHENTICATION = [REMOTE_USER]
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.RemoteUserBackend"]
    return settings


def test_a_forged_form_riding_on_the_web_servers_remote_user_is_403(remote_user: Any) -> None:
    assert_refusal(forged_form(REMOTE_USER="alice"), 403, "csrf_failed")


def test_the_remote_user_with_the_pages_csrf_token_mints(remote_user: Any) -> None:
    assert with_the_pages_token(REMOTE_USER="alice").status_code == 200


def test_the_remote_user_beside_an_app_header_is_still_csrf_checked(remote_user: Any) -> None:
    # The class that authenticated read REMOTE_USER, not the header: the header's scheme does not matter.
    assert_refusal(forged_form(REMOTE_USER="alice", HTTP_AUTHORIZATION="Bearer anything"), 403, "csrf_failed")


def test_a_session_beside_an_app_header_is_still_csrf_checked(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, DEVICE]
    User.objects.create_user("phone-owner", password="pw")
    browser = logged_in_browser()
    response = post_token(browser, csrf=False, HTTP_AUTHORIZATION="Device phone-owner")
    assert_refusal(response, 403, "csrf_failed")  # the session authenticated, so its CSRF rule holds


def test_an_app_header_a_browser_never_sends_by_itself_needs_no_csrf_token(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, DEVICE]
    User.objects.create_user("phone-owner", password="pw")
    assert app_call().status_code == 200


class _SchemeAuthentication(authentication.BaseAuthentication):
    """Authenticates `Authorization: <scheme> <username>`: a stand-in for a Digest or Kerberos
    (Negotiate) class, whose credentials a browser caches and replays on a forged form."""

    scheme = ""

    def authenticate(self, request: Request) -> tuple[User, str] | None:
        given, _, username = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if given != self.scheme:
            return None
        user = User.objects.filter(username=username).first()
        if user is None:
            raise exceptions.AuthenticationFailed("Unknown user.")
        return user, username

    def authenticate_header(self, request: Request) -> str:
        return self.scheme


class DigestAuthentication(_SchemeAuthentication):
    scheme = "Digest"


class NegotiateAuthentication(_SchemeAuthentication):
    scheme = "Negotiate"


@pytest.mark.parametrize(("listed", "scheme"), [(DIGEST, "Digest"), (NEGOTIATE, "Negotiate")])
def test_a_forged_form_with_cached_digest_or_negotiate_credentials_is_403(
    settings: Any, alice: User, listed: str, scheme: str
) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [listed]
    assert_refusal(forged_form(HTTP_AUTHORIZATION=f"{scheme} alice"), 403, "csrf_failed")
    assert with_the_pages_token(HTTP_AUTHORIZATION=f"{scheme} alice").status_code == 200
