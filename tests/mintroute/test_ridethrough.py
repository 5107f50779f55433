"""Riding through an outage (mintroute.ridethrough), in both SPORTS_TOKEN_SHARING modes and both entries:
a mint that fails on the service's side answers the token the caller would have been handed while
fresh, if it has more than 60 s left; never after reason "unauthorized" or `upstream_unauthorized`.
And it covers the browser client's refreshes: asked at the moment the client itself chooses (node runs it
on the route's answers), the route answers the held token."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.utils.http import http_date

from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import ApiKey
from tests.mintroute.conftest import logged_in_browser, post_token
from tests.mintroute.entries import Entry, assert_refusal
from tests.upstreams import closed_port_url, fake_upstream, http_response

pytestmark = pytest.mark.usefixtures("sharing")  # both modes


def envelope(code: str, data: dict[str, Any] | None = None) -> bytes:
    error = {"code": code, "message": "No.", **({"data": data} if data else {})}
    return http_response(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode())


# kind -> (a stand-in service that fails that way, the route's status and error code)
FAILURES: dict[str, tuple[Callable[[], AbstractContextManager[str]], int, str]] = {
    "down": (lambda: nullcontext(closed_port_url()), 503, "upstream_unavailable"),
    "hanging": (lambda: fake_upstream(lambda body: None), 504, "upstream_timeout"),
    "rate_limited": (
        lambda: fake_upstream(lambda body: envelope("rate_limited", {"retryAfter": 3})),
        503,
        "upstream_rate_limited",
    ),
    "garbage": (
        lambda: fake_upstream(lambda body: http_response(b"<h1>oops</h1>", content_type="text/html")),
        502,
        "upstream_error",
    ),
    "error": (lambda: fake_upstream(lambda body: envelope("internal_error")), 502, "upstream_error"),
}
UNAUTHORIZED = (lambda: fake_upstream(lambda body: envelope("unauthorized")), 502, "upstream_unauthorized")
REFRESH_MOMENT = Path(__file__).resolve().parents[1] / "js" / "refresh-moment.mjs"


@contextmanager
def failing(settings: Any, kind: str) -> Iterator[None]:
    """The site's service fails as `kind` says, from here to the end of the block; then it is back."""
    service = FAILURES[kind][0] if kind in FAILURES else UNAUTHORIZED[0]
    up = settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL, settings.SPORTS_TIMEOUT
    with service() as url:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL, settings.SPORTS_TIMEOUT = "http", url, 0.5
        try:
            yield
        finally:
            settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL, settings.SPORTS_TIMEOUT = up


@pytest.mark.parametrize("kind", FAILURES)
def test_a_failed_mint_answers_the_held_token_with_more_than_a_minute_left(
    settings: Any, one_clock: ManualClock, kind: str
) -> None:
    browser = logged_in_browser()
    held = post_token(browser).json()
    one_clock.advance(539)  # past half-life, 61 s left: the route mints again
    with failing(settings, kind):
        response = post_token(browser)
    assert response.status_code == 200, response.content
    assert response.json() == held  # the token and its true expiresAt
    assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize("kind", FAILURES)
def test_with_a_minute_or_less_left_the_failure_is_answered(settings: Any, one_clock: ManualClock, kind: str) -> None:
    browser = logged_in_browser()
    post_token(browser)
    one_clock.advance(540)  # 60 s left
    with failing(settings, kind):
        assert_refusal(post_token(browser), *FAILURES[kind][1:])


@pytest.mark.parametrize("kind", ["down", "error"])
def test_never_after_reason_unauthorized(settings: Any, one_clock: ManualClock, kind: str) -> None:
    browser = logged_in_browser()
    post_token(browser)
    one_clock.advance(100)
    with failing(settings, kind):
        assert_refusal(post_token(browser, '{"reason": "unauthorized"}'), *FAILURES[kind][1:])


def test_never_after_upstream_unauthorized(settings: Any, one_clock: ManualClock, site_key: str) -> None:
    browser = logged_in_browser()
    post_token(browser)
    one_clock.advance(400)
    with failing(settings, "unauthorized"):
        assert_refusal(post_token(browser), *UNAUTHORIZED[1:])
    settings.SPORTS_TRANSPORT = "sandbox"
    ApiKey.objects.get(secret_hash=hash_secret(site_key)).revoke()  # the sandbox refuses the key itself
    assert_refusal(post_token(browser), 502, "upstream_unauthorized")


def test_what_is_held_is_this_logins_token_or_the_sites(settings: Any, sharing: str, one_clock: ManualClock) -> None:
    held = post_token(logged_in_browser("alice")).json()
    one_clock.advance(400)
    with failing(settings, "down"):
        bob = post_token(logged_in_browser("bob"))
    if sharing == "site":
        assert bob.status_code == 200
        assert bob.json() == held  # the site's token is every caller's
    else:
        assert_refusal(bob, 503, "upstream_unavailable")  # alice's token is not bob's


def test_the_async_entry_rides_through_the_same_way(
    asgi_server: str, settings: Any, clock: ManualClock, one_clock: ManualClock
) -> None:
    entry = Entry("asgi", asgi_server)
    site = entry.browser()
    held = site.mint().json()
    one_clock.advance(539)
    with failing(settings, "down"):
        riding = site.mint()
        one_clock.advance(1)
        refused = site.mint()
    entry.close()
    assert riding.status_code == 200, riding.text
    assert riding.json() == held
    assert refused.status_code == 503
    assert refused.json()["error"] == "upstream_unavailable"


def refresh_moments(answers: list[tuple[Any, datetime]]) -> list[datetime]:
    """When the browser client, with its default options, asks for its next token after each (answer of the
    route, time it arrived): the client itself says, run by node on the fake clock of tests/js/."""
    node = shutil.which("node")
    assert node is not None, "node runs the browser client (as `make check` does)"
    received = [
        {
            "answer": response.json(),
            "headers": {"Date": http_date(at.timestamp()), "Content-Type": response["Content-Type"]},
            "receivedAtMs": int(at.timestamp() * 1000),
        }
        for response, at in answers
    ]
    out = subprocess.run(  # noqa: S603 - node, a fixed script of the tests
        [node, str(REFRESH_MOMENT)], input=json.dumps(received), capture_output=True, check=True, text=True, timeout=30
    ).stdout
    return [datetime.fromtimestamp(moment / 1000, UTC) for moment in json.loads(out)]


def test_the_browser_clients_scheduled_refresh_is_ridden_through(settings: Any, one_clock: ManualClock) -> None:
    """A page that got the token minted and one handed it 200 s later both ask when the route stops handing
    it out; then, the service down, the route answers them the held token; the service back, it mints."""
    browser = logged_in_browser()
    minted = post_token(browser)
    received = [(minted, one_clock.now())]
    one_clock.advance(200)
    handed_out = post_token(browser)  # another page of this login (in "site" mode: of the site)
    received.append((handed_out, one_clock.now()))
    held = minted.json()
    assert handed_out.json() == held

    asked_at = refresh_moments(received)
    assert asked_at[0] == asked_at[1], asked_at  # one token, one moment: its half-life
    one_clock.advance((asked_at[0] - one_clock.now()).total_seconds() - 1)
    assert post_token(browser, '{"reason": "refresh"}').json() == held  # a second earlier: handed out again
    one_clock.advance(1)
    with failing(settings, "down"):
        riding = post_token(browser, '{"reason": "refresh"}')
    assert riding.status_code == 200, riding.content
    assert riding.json() == held
    fresh = post_token(browser, '{"reason": "refresh"}')  # the service is back: the same ask mints
    assert fresh.status_code == 200, fresh.content
    assert fresh.json()["token"] != held["token"]
