"""mintroute.access_log: one access line per request through `mintroute.access`, as the site's own log handler
writes it (its filter, its text and JSON formats), with the route's outcome, and never a secret."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from config.logging import JsonFormatter
from mintroute import access_log
from tests.mintroute.conftest import Console, logged_in_browser, post_token

FORWARDED_CLIENT = "198.51.100.7"


@pytest.fixture(autouse=True)
def pinned_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request starts at a whole second and answers 12.3 ms later."""
    readings = iter(value for second in range(100, 200) for value in (float(second), second + 0.0123))
    monkeypatch.setattr(access_log, "timer", lambda: next(readings))


@pytest.fixture
def behind_a_proxy(settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1  # the test client's 127.0.0.1 is a trusted proxy


def access_lines(console: Console, request_id: str) -> list[str]:
    """The messages of `request_id`'s access lines, each checked to be at INFO."""
    lines = console.of(request_id, "mintroute.access")
    assert {line.level for line in lines} <= {"INFO"}
    return [line.message for line in lines]


@pytest.mark.usefixtures("behind_a_proxy")
def test_a_mint_has_one_line_with_its_fields_and_no_secret(console: Console, api_key: str) -> None:
    browser = logged_in_browser()
    answer = post_token(browser, HTTP_X_REQUEST_ID="mint-1", HTTP_X_FORWARDED_FOR=FORWARDED_CLIENT)

    assert answer.status_code == 200
    user = User.objects.get(username="alice")
    [line] = access_lines(console, "mint-1")
    assert line == (
        f"POST /api/sports-token 200 outcome=minted duration_ms=12.3 user_id={user.pk} "
        f"client_address={FORWARDED_CLIENT}"
    )
    written = "\n".join(console.lines())
    secrets = [answer.json()["token"], api_key, browser.cookies["sessionid"].value, browser.cookies["csrftoken"].value]
    assert [secret for secret in secrets if secret in written] == []


@pytest.mark.usefixtures("behind_a_proxy")
def test_the_json_format_gives_each_field_its_own_key(console: Console) -> None:
    console.handler.setFormatter(JsonFormatter())  # production's format (DJANGO_LOG_FORMAT=json)
    answer = post_token(logged_in_browser(), HTTP_X_REQUEST_ID="mint-2", HTTP_X_FORWARDED_FOR=FORWARDED_CLIENT)

    assert answer.status_code == 200
    entries = [json.loads(line) for line in console.lines()]
    [access] = [entry for entry in entries if entry["logger"] == "mintroute.access" and entry["request_id"] == "mint-2"]
    assert {key: access[key] for key in access if key not in ("time", "message")} == {
        "level": "INFO",
        "logger": "mintroute.access",
        "request_id": "mint-2",
        "method": "POST",
        "path": "/api/sports-token",
        "status": 200,
        "outcome": "minted",
        "duration_ms": 12.3,
        "user_id": str(User.objects.get(username="alice").pk),
        "client_address": FORWARDED_CLIENT,
    }
    assert {entry["request_id"] for entry in entries} - {"mint-2"}  # the login page's lines: ids of their own


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize(
    ("headers", "status", "outcome"),
    [({}, 401, "not_authenticated"), ({"HTTP_HOST": "evil.example"}, 400, "bad_request")],
    ids=["the-views-refusal", "route_answers_json's-refusal"],
)
def test_a_refusal_of_the_route_is_its_outcome(
    console: Console, headers: dict[str, str], status: int, outcome: str
) -> None:
    answer = post_token(Client(), HTTP_X_REQUEST_ID="refused", **headers)

    assert answer.status_code == status
    [line] = access_lines(console, "refused")
    assert line.startswith(f"POST /api/sports-token {status} outcome={outcome} duration_ms=12.3 user_id=- ")


@pytest.mark.usefixtures("behind_a_proxy")
def test_another_path_has_no_outcome_and_its_query_is_never_written(console: Console) -> None:
    Client().get("/healthz?token=a.secret.token", headers={"X-Request-ID": "probe"})

    [line] = access_lines(console, "probe")
    assert line == "GET /healthz 200 outcome=- duration_ms=12.3 user_id=- client_address=127.0.0.1"
    assert "a.secret.token" not in "\n".join(console.lines())


@pytest.mark.usefixtures("behind_a_proxy")
def test_a_path_cannot_write_a_line_of_its_own(console: Console) -> None:
    Client().get("/x%0D%0A2026-01-01 INFO mintroute.access [forged]: GET /", headers={"X-Request-ID": "crafted"})

    [line] = access_lines(console, "crafted")
    assert line.startswith("GET /x%0D%0A2026-01-01%20INFO%20mintroute.access%20%5Bforged%5D:%20GET%20/ 404 ")
    assert console.of("forged") == []  # Django's own "Not Found" line escapes the path too


def test_the_line_never_loads_a_session_to_name_the_user(
    console: Console, django_assert_num_queries: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = logged_in_browser()
    monkeypatch.setattr(access_log, "request_id_for", lambda request: "logged-in-probe")
    with django_assert_num_queries(0):  # /healthz reads no session; the line must not either
        browser.get("/healthz")

    [line] = access_lines(console, "logged-in-probe")
    assert " user_id=- " in line


def test_a_page_that_looked_at_its_user_names_it(console: Console, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = logged_in_browser()
    monkeypatch.setattr(access_log, "request_id_for", lambda request: "page")
    browser.get("/")

    [line] = access_lines(console, "page")
    assert f" user_id={User.objects.get(username='alice').pk} " in line
