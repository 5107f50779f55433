"""SPORTS_TOKEN_SHARING = "site": one token for every caller, minted once per half-life (mintroute.sharing).

In one process, on the sandbox and the test clock; tests/production/test_site_mode.py runs two
processes of the site on one Redis against a counting stand-in service.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache
from django.test import Client

from mintroute import sharing
from mintroute.checks import check_mint_route_settings
from sportsproxy.sandbox.clock import ManualClock
from tests.counting_service import CountingService
from tests.mintroute.conftest import logged_in_browser, post_token, upstream_calls
from tests.mintroute.entries import Entry, assert_refusal
from tests.mintroute.test_authentication import DEVICE, SESSION, app_call
from tests.production.cluster import free_port

UNAUTHORIZED = '{"reason": "unauthorized"}'


@pytest.fixture(autouse=True)
def site_mode(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.SPORTS_TOKEN_SHARING = "site"
    # The process's own stand-in for the cache, empty for each test (LocMemCache shares storage by name).
    monkeypatch.setattr(sharing, "PROCESS_CACHE", LocMemCache(f"sharing-test-{time.monotonic_ns()}", {}))


def test_every_login_and_every_app_gets_the_one_site_token(settings: Any, site_key: str) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, DEVICE]
    User.objects.create_user("phone-owner", password="pw")
    tokens = {post_token(logged_in_browser(name)).json()["token"] for name in ("alice", "bob", "carol")}
    tokens.add(app_call().json()["token"])
    assert len(tokens) == 1
    assert upstream_calls(site_key) == 1


def test_the_site_mints_again_past_half_life_and_everyone_moves_to_it(one_clock: ManualClock, site_key: str) -> None:
    alice, bob = logged_in_browser("alice"), logged_in_browser("bob")
    first = post_token(alice).json()["token"]
    one_clock.advance(299)  # more than half the ttl left: still the site's token
    assert post_token(bob).json()["token"] == first
    one_clock.advance(2)
    second = post_token(bob).json()["token"]
    assert second != first
    assert post_token(alice).json()["token"] == second
    assert upstream_calls(site_key) == 1  # this minute's one call: the second mint


def test_an_unauthorized_flood_costs_one_mint_per_ten_seconds(one_clock: ManualClock, site_key: str) -> None:
    browsers = [logged_in_browser(f"user{n}") for n in range(5)]
    first = post_token(browsers[0]).json()["token"]
    replacements = {post_token(browser, UNAUTHORIZED).json()["token"] for browser in browsers}
    assert len(replacements) == 1
    assert first not in replacements
    assert upstream_calls(site_key) == 2
    assert post_token(browsers[0]).json()["token"] in replacements  # the replacement is the site's token
    one_clock.advance(9)
    assert post_token(browsers[1], UNAUTHORIZED).json()["token"] in replacements
    one_clock.advance(1)  # ten seconds after the replacement: another one
    assert post_token(browsers[2], UNAUTHORIZED).json()["token"] not in replacements
    assert upstream_calls(site_key) == 3


def test_a_refresh_does_not_make_a_replacement_for_unauthorized_callers(site_key: str) -> None:
    browser = logged_in_browser()
    first = post_token(browser).json()["token"]
    assert post_token(browser, UNAUTHORIZED).json()["token"] != first
    assert upstream_calls(site_key) == 2


@pytest.mark.django_db(transaction=True)  # the callers' threads see the users
def test_concurrent_callers_cost_one_mint(site_key: str, settings: Any) -> None:
    browsers = [logged_in_browser(f"user{n}", REMOTE_ADDR=f"10.0.0.{n}") for n in range(8)]
    barrier = threading.Barrier(len(browsers))
    answers: list[Any] = []

    def call(browser: Client) -> None:
        barrier.wait(timeout=10)
        answers.append(post_token(browser))

    threads = [threading.Thread(target=call, args=(browser,)) for browser in browsers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert [answer.status_code for answer in answers] == [200] * len(browsers)
    assert len({answer.json()["token"] for answer in answers}) == 1
    assert upstream_calls(site_key) == 1


def test_twenty_users_behind_one_address_are_all_answered_with_the_default_limits(site_key: str) -> None:
    """The per-IP limit (10/m) counts the requests that reach the single flight, not the reads of the
    site's token: an office behind one NAT opening the page at once is not refused."""
    browsers = [logged_in_browser(f"office{n}", REMOTE_ADDR="203.0.113.7") for n in range(20)]
    answers = [post_token(browser) for browser in browsers]
    assert [answer.status_code for answer in answers] == [200] * 20
    assert len({answer.json()["token"] for answer in answers}) == 1
    assert upstream_calls(site_key) == 1


def test_the_per_ip_limit_still_counts_every_request_that_reaches_the_flight(
    one_clock: ManualClock, settings: Any
) -> None:
    settings.SPORTS_TOKEN_RATE = "10/h"  # eleven replacements ten seconds apart fit in one window
    browsers = [logged_in_browser(f"office{n}", REMOTE_ADDR="203.0.113.8") for n in range(11)]
    answers = []
    for browser in browsers:
        one_clock.advance(11)  # past the last replacement's window: each `unauthorized` call mints
        answers.append(post_token(browser, UNAUTHORIZED))
    assert [answer.status_code for answer in answers] == [200] * 10 + [429]
    assert "client IP" in answers[-1].json()["message"]


def test_a_read_of_the_site_token_still_counts_for_its_user(site_key: str) -> None:
    browser = logged_in_browser("reader", REMOTE_ADDR="203.0.113.9")
    assert [post_token(browser).status_code for _ in range(11)] == [200] * 10 + [429]
    assert upstream_calls(site_key) == 1


@pytest.fixture
def slow_service(settings: Any, one_clock: ManualClock) -> Iterator[CountingService]:
    """The site mints from a stand-in service on a socket that answers after MINT_SECONDS; the SDK's
    timeout is the default's, so a lock held for its old full life would stall the others ~48 s."""
    service = CountingService(delay=MINT_SECONDS, now=one_clock.now)
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = service.url
    settings.SPORTS_TIMEOUT = 5
    yield service
    service.close()


MINT_SECONDS = 1.5


def lock_released(lock: str, within: float = 2) -> bool:
    """Whether the flight's lock is gone within `within` seconds (a flight stores its token, then drops its lock)."""
    deadline = time.monotonic() + within
    while cache.get(lock) is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    return cache.get(lock) is None


def leave_mid_mint(address: str, caller: Any, service: CountingService, body: bytes = b"{}") -> None:
    """`caller`'s browser posts a mint on a raw socket and closes it once the service holds the mint."""
    cookies = f"sessionid={caller.get_cookie('sessionid')}; csrftoken={caller.get_cookie('csrftoken')}"
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(
            b"POST /api/sports-token HTTP/1.1\r\nHost: " + address.encode() + b"\r\n"
            b"Content-Type: application/json\r\nCookie: " + cookies.encode() + b"\r\n"
            b"X-CSRFToken: " + caller.get_cookie("csrftoken").encode() + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        deadline = time.monotonic() + 5
        while service.requests == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.requests == 1, "the leaving caller's mint never reached the service"
    # closed: uvicorn tells Django the client left, and Django cancels the view


@pytest.mark.serial  # a bound in wall-clock time
@pytest.mark.parametrize("reason", [None, "unauthorized"])
def test_an_asgi_caller_that_leaves_mid_mint_costs_the_others_nothing(
    asgi_server: str, slow_service: CountingService, reason: str | None
) -> None:
    """The flight completes for the others (one mint, its token for the next caller, within the mint's
    own time) and the lock is gone; before, the lock stayed held for its full life (~48 s)."""
    entry = Entry("asgi", asgi_server)
    try:
        leaver, next_caller = entry.browser("leaver"), entry.browser("next")
        body = f'{{"reason": "{reason}"}}' if reason else ""
        leave_mid_mint(asgi_server, leaver, slow_service, body.encode() or b"{}")
        started = time.monotonic()
        answer = next_caller.mint(body or None)
        waited = time.monotonic() - started
    finally:
        entry.close()
    assert answer.status_code == 200, answer.text
    assert waited < MINT_SECONDS + 1, waited
    assert slow_service.mints == 1  # the leaver's flight landed for the next caller
    assert answer.json()["token"] == "standin.1.signature"
    assert lock_released(sharing._Keys.of_this_site().lock)  # after the token is stored, which the caller read


def test_a_mint_ended_by_a_base_exception_releases_the_lock_at_once(site_key: str) -> None:
    """Not an Exception (KeyboardInterrupt, SystemExit, a cancellation): the plan cannot settle it, so
    the lease's renewer drops the lock rather than leave it for its expiry."""

    def interrupted() -> dict[str, str]:
        raise KeyboardInterrupt

    lock = sharing._Keys.of_this_site().lock
    with pytest.raises(KeyboardInterrupt):
        sharing.site_token(600, None, interrupted)
    assert lock_released(lock)


@pytest.mark.serial  # a bound in wall-clock time
def test_the_live_holder_renews_its_lease_past_the_lease_s_life(monkeypatch: pytest.MonkeyPatch, site_key: str) -> None:
    """A mint longer than the lease keeps the lock: nobody else mints meanwhile."""
    monkeypatch.setattr(sharing, "LEASE_SECONDS", 1)
    monkeypatch.setattr(sharing, "RENEW_SECONDS", 0.2)
    mints: list[str] = []
    holding = threading.Event()

    def slow_mint() -> dict[str, str]:
        mints.append("mint")
        holding.set()
        time.sleep(2.5)  # past two and a half leases
        return {"token": f"t{len(mints)}", "expiresAt": "2026-03-14T15:19:26+00:00"}

    answers: list[dict[str, str]] = []
    holder = threading.Thread(target=lambda: answers.append(sharing.site_token(600, None, slow_mint)))
    holder.start()
    assert holding.wait(5)
    time.sleep(1.5)  # the lease, unrenewed, would have expired by now
    answers.append(sharing.site_token(600, None, slow_mint))
    holder.join(10)
    assert mints == ["mint"]
    assert [answer["token"] for answer in answers] == ["t1", "t1"]


@pytest.mark.serial  # a wall-clock window
def test_a_dead_lock_holder_delays_the_mint_no_longer_than_its_lock(settings: Any, site_key: str) -> None:
    settings.SPORTS_TIMEOUT = 0.5
    cache.set(f"{sharing._Keys.of_this_site().lock}", "a-holder-that-died", sharing.LEASE_SECONDS)
    started = time.monotonic()
    response = post_token(logged_in_browser())
    assert response.status_code == 200
    assert sharing.LEASE_SECONDS - 1 <= time.monotonic() - started < sharing.LEASE_SECONDS + 2
    assert upstream_calls(site_key) == 1


def test_without_the_cache_the_callers_after_a_mint_get_its_token_from_this_process(
    settings: Any, site_key: str
) -> None:
    browser = logged_in_browser()
    settings.RATELIMIT_ENABLE = False  # so the rate limits do not touch the cache first (they fail closed)
    settings.CACHES = {
        **settings.CACHES,
        "limits": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"},
    }
    settings.RATELIMIT_USE_CACHE = "limits"  # the site's token lives there too (the sandbox keeps "default")
    response = post_token(browser)
    assert response.status_code == 200, response.content
    assert post_token(logged_in_browser("bob")).json()["token"] == response.json()["token"]  # kept in this process
    assert upstream_calls(site_key) == 1


def test_any_other_mode_is_check_error_e008_and_a_502_naming_it(settings: Any) -> None:
    settings.SPORTS_TOKEN_SHARING = "everyone"
    settings.DEBUG = True  # the answer names the setting for the developer only
    assert [message.id for message in check_mint_route_settings()] == ["mintroute.E008"]
    body = assert_refusal(post_token(logged_in_browser()), 502, "upstream_error")
    assert "SPORTS_TOKEN_SHARING" in body["message"]


@pytest.mark.parametrize("mode", ["login", "site"])
def test_both_modes_pass_the_check(settings: Any, mode: str) -> None:
    settings.SPORTS_TOKEN_SHARING = mode
    assert check_mint_route_settings() == []


@pytest.mark.parametrize(
    "stored",
    [
        {"token": "t", "expiresAt": "2026-03-14T15:30:00", "ttl": 600, "mintedAt": "2026-03-14T15:20:00"},
        {"token": "t", "expiresAt": "tomorrow", "ttl": 600, "mintedAt": "2026-03-14T15:20:00+00:00"},
        "not a record",
    ],
    ids=["no-offset", "not-a-time", "not-a-dict"],
)
def test_a_site_token_the_route_cannot_read_is_minted_over(stored: object, site_key: str) -> None:
    if isinstance(stored, dict):
        stored["replacement"] = False
    cache.set(sharing._Keys.of_this_site().token, stored, 600)
    response = post_token(logged_in_browser())
    assert response.status_code == 200
    assert response.json()["token"] != "t"
    assert upstream_calls(site_key) == 1


def test_while_the_cache_is_gone_the_callers_of_one_process_share_one_mint(settings: Any) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "gone": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        },
    }
    settings.RATELIMIT_USE_CACHE = "gone"  # refused: what a lost primary is before Sentinel names the next
    mints: list[str] = []

    def mint() -> dict[str, str]:
        time.sleep(0.2)  # long enough for every caller to meet the flight
        mints.append(token := f"token-{len(mints)}")
        return {"token": token, "expiresAt": (sharing.reuse.now() + timedelta(seconds=600)).isoformat()}

    answers: list[str] = []
    callers = [
        threading.Thread(target=lambda: answers.append(sharing.site_token(600, None, mint)["token"])) for _ in range(6)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=10)
    answers.append(sharing.site_token(600, None, mint)["token"])  # a caller after them: the same token, fresh
    assert answers == ["token-0"] * 7
    assert mints == ["token-0"]
