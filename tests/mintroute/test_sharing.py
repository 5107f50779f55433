"""SPORTS_TOKEN_SHARING = "site": one token for every caller, minted once per half-life (mintroute.sharing).

In one process, on the sandbox and the test clock; tests/production/test_site_mode.py runs two
processes of the site on one Redis against a counting stand-in service.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from mintroute import sharing
from mintroute.checks import check_mint_route_settings
from sportsproxy.sandbox.clock import ManualClock
from tests.mintroute.conftest import logged_in_browser, post_token, upstream_calls
from tests.mintroute.entries import assert_refusal
from tests.mintroute.test_authentication import DEVICE, SESSION, app_call

UNAUTHORIZED = '{"reason": "unauthorized"}'


@pytest.fixture(autouse=True)
def site_mode(settings: Any) -> None:
    settings.SPORTS_TOKEN_SHARING = "site"


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


@pytest.mark.serial  # a wall-clock window
def test_a_dead_lock_holder_delays_the_mint_no_longer_than_its_lock(settings: Any, site_key: str) -> None:
    settings.SPORTS_TIMEOUT = 0.5
    cache.set(f"{sharing._Keys.of_this_site().lock}", "a-holder-that-died", 4)
    started = time.monotonic()
    response = post_token(logged_in_browser())
    assert response.status_code == 200
    assert 3 <= time.monotonic() - started < 6
    assert upstream_calls(site_key) == 1


def test_without_the_cache_a_caller_gets_a_token_of_its_own(settings: Any) -> None:
    browser = logged_in_browser()
    settings.RATELIMIT_ENABLE = False  # so the rate limits do not touch the cache first (they fail closed)
    settings.CACHES = {
        **settings.CACHES,
        "limits": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"},
    }
    settings.RATELIMIT_USE_CACHE = "limits"  # the site's token lives there too (the sandbox keeps "default")
    response = post_token(browser)
    assert response.status_code == 200, response.content
    assert post_token(browser).json()["token"] != response.json()["token"]  # nothing shared, nothing stored


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
