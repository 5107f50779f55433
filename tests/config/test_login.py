"""The login forms (`/accounts/login/` and the admin's): 10 failed attempts a minute per client
IP across both, then 429 on either without checking the password; a login hint only where a site app gives one."""

from __future__ import annotations

import re
import types
from collections.abc import Iterator
from typing import Any

import django_ratelimit.core
import pytest
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db import OperationalError, connection
from django.test import Client

from tests.dual_stack import client_from, dual_stack_server
from tests.upstreams import closed_port_url

PASSWORD = "right-pass-123"
ATTACKER = "203.0.113.7"


@pytest.fixture(autouse=True)
def _one_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every attempt of a test in one limit window (django-ratelimit's fixed minutes): on the real clock a slow
    run crossed a minute between the tenth failure and the eleventh, and the eleventh was let through."""
    monkeypatch.setattr(django_ratelimit.core, "time", types.SimpleNamespace(time=lambda: 1_800_000_000.0))


@pytest.fixture
def user() -> User:
    return User.objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def checked() -> Iterator[list[str]]:
    """Every password Django's authentication looked at, failed or not, in order."""
    seen: list[str] = []

    def failed(sender: Any, credentials: dict[str, Any], **kwargs: Any) -> None:
        seen.append("failed")

    def succeeded(sender: Any, user: User, **kwargs: Any) -> None:
        seen.append("succeeded")

    user_login_failed.connect(failed)
    user_logged_in.connect(succeeded)
    yield seen
    user_login_failed.disconnect(failed)
    user_logged_in.disconnect(succeeded)


def log_in(password: str, address: str = ATTACKER, form: str = "/accounts/login/") -> Any:
    return Client(REMOTE_ADDR=address).post(form, {"username": "alice", "password": password})


ADMIN = "/admin/login/"


def test_the_eleventh_attempt_of_a_minute_is_429_without_a_password_check(user: User, checked: list[str]) -> None:
    failures = [log_in(f"guess-{number}") for number in range(10)]
    assert [answer.status_code for answer in failures] == [200] * 10
    assert checked == ["failed"] * 10

    refused = log_in(PASSWORD)  # even the right password: it is not looked at
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 61
    assert "Too many failed logins from your address" in refused.content.decode()
    assert checked == ["failed"] * 10  # neither a failure nor a login was recorded
    assert "_auth_user_id" not in refused.wsgi_request.session


def test_the_admins_login_is_throttled_too(user: User, checked: list[str]) -> None:
    user.is_staff = True
    user.save()
    assert [log_in(f"guess-{number}", form=ADMIN).status_code for number in range(10)] == [200] * 10
    refused = log_in(PASSWORD, form=ADMIN)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 61
    assert "Too many failed logins from your address" in refused.content.decode()
    assert checked == ["failed"] * 10
    assert log_in(PASSWORD, address="198.51.100.1", form=ADMIN).status_code == 302  # staff elsewhere log in


def test_both_forms_share_one_count_of_failures(user: User, checked: list[str]) -> None:
    user.is_staff = True
    user.save()
    forms = ["/accounts/login/", ADMIN] * 5
    assert [log_in(f"guess-{n}", form=form).status_code for n, form in enumerate(forms)] == [200] * 10
    assert log_in(PASSWORD, form=ADMIN).status_code == 429
    assert log_in(PASSWORD, form="/accounts/login/").status_code == 429
    assert checked == ["failed"] * 10  # the right password was looked at on neither form


def test_a_success_on_either_form_is_given_back(user: User) -> None:
    user.is_staff = True
    user.save()
    statuses = [log_in(f"guess-{n}", form=ADMIN).status_code for n in range(9)]
    statuses.append(log_in(PASSWORD, form=ADMIN).status_code)
    statuses += [log_in(f"again-{n}").status_code for n in range(2)]
    assert statuses == [200] * 9 + [302] + [200, 429]


def test_other_addresses_are_not_throttled(user: User) -> None:
    for number in range(11):
        log_in(f"guess-{number}")
    assert log_in(PASSWORD, address="198.51.100.1").status_code == 302


def test_successful_logins_are_not_failures(user: User) -> None:
    statuses = [log_in(f"guess-{number}").status_code for number in range(9)]
    statuses.append(log_in(PASSWORD).status_code)
    statuses += [log_in(f"guess-again-{number}").status_code for number in range(2)]
    assert statuses == [200] * 9 + [302] + [200, 429]  # the tenth failure is allowed, the eleventh is not


def test_the_limit_ends_with_its_minute(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_800_000_000.0]
    monkeypatch.setattr(django_ratelimit.core, "time", types.SimpleNamespace(time=lambda: now[0]))
    for number in range(10):
        log_in(f"guess-{number}")
    assert log_in(PASSWORD).status_code == 429
    now[0] += 61
    assert log_in(PASSWORD).status_code == 302


def test_the_client_ip_is_the_routes_rule_behind_a_proxy(user: User, settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    settings.SPORTS_TRUSTED_PROXIES = ["10.0.0.2"]
    proxy = Client(REMOTE_ADDR="10.0.0.2")
    for number in range(10):
        proxy.post("/accounts/login/", {"username": "alice", "password": f"g{number}"}, HTTP_X_FORWARDED_FOR=ATTACKER)
    forged = {"HTTP_X_FORWARDED_FOR": f"198.51.100.9, {ATTACKER}"}  # a client's own entry is not trusted
    assert proxy.post("/accounts/login/", {"username": "alice", "password": "g"}, **forged).status_code == 429
    other = {"HTTP_X_FORWARDED_FOR": "198.51.100.9"}
    assert proxy.post("/accounts/login/", {"username": "alice", "password": PASSWORD}, **other).status_code == 302


@pytest.fixture
def dual_stack(transactional_db: None) -> Iterator[str]:
    with dual_stack_server() as url:
        yield url


def log_in_over_tcp(url: str, source: str, password: str) -> int:
    """A login from the IPv4 address `source` (any of 127.0.0.0/8 is this machine), with its CSRF token."""
    with client_from(url, source) as browser:
        page = browser.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None, page.text
        form = {"username": "alice", "password": password, "csrfmiddlewaretoken": token.group(1)}
        return browser.post("/accounts/login/", data=form).status_code


def test_ipv4_clients_of_a_server_bound_to_ipv6_count_each_by_its_own_address(dual_stack: str) -> None:
    User.objects.create_user("alice", password=PASSWORD)
    attacker, neighbour = "127.0.0.1", "127.0.0.2"  # seen by the server as ::ffff:127.0.0.1, ::ffff:127.0.0.2
    assert [log_in_over_tcp(dual_stack, attacker, f"g{n}") for n in range(10)] == [200] * 10
    assert log_in_over_tcp(dual_stack, attacker, PASSWORD) == 429
    assert log_in_over_tcp(dual_stack, neighbour, PASSWORD) == 302  # not the attacker's bucket


def test_an_unreachable_store_refuses_logins_with_503(user: User, settings: Any, checked: list[str]) -> None:
    redis_url = closed_port_url().replace("http://", "redis://")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    answer = log_in(PASSWORD)
    assert answer.status_code == 503
    assert answer["Retry-After"] == "5"
    assert checked == []


def test_attempts_the_database_could_not_check_are_not_failures(user: User, checked: list[str]) -> None:
    """A database failover: while every query is refused the form answers 503 and checks no password; those
    attempts are given back, so the user logs in as soon as the database answers, not a minute later."""

    def refuse(*args: Any) -> None:
        raise OperationalError("connection to server failed: Connection refused")

    with connection.execute_wrapper(refuse):
        statuses = [log_in(PASSWORD).status_code for _ in range(12)]
    assert statuses == [503] * 12
    assert checked == []
    assert log_in(PASSWORD).status_code == 302
    statuses = [log_in(f"guess-{number}").status_code for number in range(11)]
    assert statuses == [200] * 10 + [429]  # the failures that did happen count as ever
