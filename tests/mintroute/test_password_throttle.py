"""Every way to present a password is throttled (mintroute.password_throttle): a failed HTTP Basic or
Digest authentication at the mint route counts in the login forms' one count (10 failures a minute per
client IP across the forms and the route); the next attempt is 429 `rate_limited` with Retry-After,
its password not checked."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_login_failed
from django.test import Client

from tests.mintroute.entries import Entry, assert_refusal
from tests.mintroute.test_authentication import SESSION

BASIC = "rest_framework.authentication.BasicAuthentication"
DIGEST = "tests.mintroute.test_csrf_rule.DigestAuthentication"
PASSWORD = "right-pass-123"
ATTACKER = "203.0.113.7"
LIMIT = 10  # failures a minute per client IP


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def basic_site(settings: Any, alice: User) -> Any:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, BASIC]
    return settings


@pytest.fixture
def checked() -> Iterator[list[str]]:
    """Every password Django's authentication found wrong, in order."""
    seen: list[str] = []

    def failed(sender: Any, credentials: dict[str, Any], **kwargs: Any) -> None:
        seen.append("failed")

    user_login_failed.connect(failed)
    yield seen
    user_login_failed.disconnect(failed)


def basic(password: str, username: str = "alice") -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def page(address: str = ATTACKER) -> Client:
    """A browser at `address` that loaded the site's page (its CSRF cookie)."""
    browser = Client(enforce_csrf_checks=True, REMOTE_ADDR=address)
    browser.get("/accounts/login/")
    return browser


def route_with(authorization: str, address: str = ATTACKER, browser: Client | None = None) -> Any:
    caller = browser or page(address)
    csrf = caller.cookies["csrftoken"].value
    return caller.post(
        "/api/sports-token",
        "{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=authorization,
        HTTP_X_CSRFTOKEN=csrf,
    )


def form_login(password: str, address: str = ATTACKER) -> Any:
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": "alice", "password": password})


def test_the_eleventh_basic_attempt_is_429_without_a_password_check(basic_site: Any, checked: list[str]) -> None:
    for number in range(LIMIT):
        assert_refusal(route_with(basic(f"guess-{number}")), 401, "not_authenticated")
    assert checked == ["failed"] * LIMIT

    refused = route_with(basic(PASSWORD))  # even the right password: it is not looked at
    body = assert_refusal(refused, 429, "rate_limited")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "Too many failed logins" in body["message"]
    assert checked == ["failed"] * LIMIT  # no eleventh check


@pytest.mark.parametrize("spelling", ["Basic\t{}", "Basic   {}", " Basic {}", "bASIC {}", "basic\t {}"])
def test_every_spelling_of_basic_that_drf_checks_is_counted(basic_site: Any, checked: list[str], spelling: str) -> None:
    for number in range(LIMIT):
        credentials = basic(f"guess-{number}").partition(" ")[2]
        assert_refusal(route_with(spelling.format(credentials)), 401, "not_authenticated")
    assert checked == ["failed"] * LIMIT  # DRF read every one of them
    assert_refusal(route_with(spelling.format(basic(PASSWORD).partition(" ")[2])), 429, "rate_limited")
    assert form_login(PASSWORD).status_code == 429  # the forms share the count


def test_the_forms_and_the_route_share_one_count(basic_site: Any) -> None:
    for number in range(LIMIT // 2):
        assert form_login(f"guess-{number}").status_code == 200
        assert_refusal(route_with(basic(f"guess-{number}")), 401, "not_authenticated")
    assert_refusal(route_with(basic(PASSWORD)), 429, "rate_limited")
    assert form_login(PASSWORD).status_code == 429


def test_failures_at_the_route_lock_the_forms(basic_site: Any) -> None:
    for number in range(LIMIT):
        assert_refusal(route_with(basic(f"guess-{number}")), 401, "not_authenticated")
    assert form_login(PASSWORD).status_code == 429
    assert (
        Client(REMOTE_ADDR=ATTACKER).post("/admin/login/", {"username": "alice", "password": PASSWORD}).status_code
        == 429
    )


def test_a_right_basic_password_is_given_back(basic_site: Any) -> None:
    for number in range(LIMIT - 1):
        assert_refusal(route_with(basic(f"guess-{number}")), 401, "not_authenticated")
    browser = page()
    for _ in range(3):  # logged in by Basic, with the page's CSRF token: not failures
        assert route_with(basic(PASSWORD), browser=browser).status_code == 200
    assert_refusal(route_with(basic("guess-last")), 401, "not_authenticated")  # the tenth failure
    assert_refusal(route_with(basic(PASSWORD)), 429, "rate_limited")


def test_other_addresses_and_session_callers_are_not_refused(basic_site: Any, alice: User) -> None:
    for number in range(LIMIT + 1):
        route_with(basic(f"guess-{number}"))
    assert route_with(basic(PASSWORD), address="203.0.113.8").status_code == 200
    session = page()
    session.force_login(alice)
    csrf = session.cookies["csrftoken"].value
    minted = session.post("/api/sports-token", "{}", content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert minted.status_code == 200  # no password presented: the login throttle does not apply


def test_digest_attempts_count_too(settings: Any, alice: User) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [DIGEST]
    for _ in range(LIMIT):
        assert_refusal(route_with("Digest mallory"), 401, "not_authenticated")  # an unknown user
    assert_refusal(route_with("Digest alice"), 429, "rate_limited")


def test_both_entries_refuse_the_eleventh_basic_attempt(entry: Entry, basic_site: Any) -> None:
    caller = entry.anonymous()
    caller.load_csrf_cookie()
    for number in range(LIMIT):
        assert_refusal(caller.mint(headers={"Authorization": basic(f"guess-{number}")}), 401, "not_authenticated")
    refused = caller.mint(headers={"Authorization": basic(PASSWORD)})
    assert_refusal(refused, 429, "rate_limited")
    assert "Retry-After" in refused.headers


def test_a_login_form_caller_past_the_proxy_counts_by_its_own_address(settings: Any, alice: User) -> None:
    """A peer that is not one of SPORTS_TRUSTED_PROXIES sends another X-Forwarded-For each time: all
    its failures count for its own address."""
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    caller = Client(REMOTE_ADDR=ATTACKER)
    for number in range(LIMIT):
        spoofed = {"HTTP_X_FORWARDED_FOR": f"198.51.100.{number}"}
        assert caller.post("/accounts/login/", {"username": "alice", "password": "g"}, **spoofed).status_code == 200
    spoofed = {"HTTP_X_FORWARDED_FOR": "198.51.100.99"}
    assert caller.post("/accounts/login/", {"username": "alice", "password": PASSWORD}, **spoofed).status_code == 429


def test_a_password_no_listed_class_reads_is_no_failure(settings: Any, alice: User) -> None:
    """A site behind a proxy's own Basic login: the header rides on every request, and the route,
    which lists only the session, never checks it."""
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION]
    for _ in range(LIMIT + 5):
        assert_refusal(route_with(basic("for-the-proxy")), 401, "not_authenticated")
    assert form_login(PASSWORD).status_code == 302
