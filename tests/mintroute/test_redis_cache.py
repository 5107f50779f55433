"""mintroute.redis_cache: Django's Redis cache counting in one round trip, on a real Redis. django-ratelimit
reads the same counts through it as through Django's own RedisCache; a counted request is one round trip, the
route's cached answer one in either mode; a Redis that is down or stops answering is the route's 503."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.core.cache import caches
from django.test import RequestFactory
from django_ratelimit.core import EXPIRATION_FUDGE, get_usage

from mintroute.redis_cache import RedisCache
from tests.mintroute.conftest import logged_in_browser, post_token
from tests.redis_server import RedisServer, round_trips

RATE = "5/m"
HUNG_REDIS_SECONDS = 1  # the socket timeout these tests give the cache
ANSWERED_WITHIN_SECONDS = HUNG_REDIS_SECONDS + 3  # the timeout, and room for a busy machine


COUNTING = "mintroute.redis_cache.RedisCache"


def cache_settings(server: RedisServer, backend: str = COUNTING, **options: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": backend, "LOCATION": server.url, "KEY_PREFIX": "site-a", "OPTIONS": options}}


def usage(scope: str, *, increment: bool = True) -> Any:
    request = RequestFactory().post("/")
    return get_usage(request, group=f"test:{scope}", key=lambda group, request: scope, rate=RATE, increment=increment)


@pytest.mark.parametrize("backend", [COUNTING, "django.core.cache.backends.redis.RedisCache"])
def test_django_ratelimit_counts_as_with_djangos_own_cache(own_redis: RedisServer, settings: Any, backend: str) -> None:
    settings.CACHES = cache_settings(own_redis, backend)
    counts = [usage("user")["count"] for _ in range(7)]
    assert counts == [1, 2, 3, 4, 5, 6, 7]
    assert [usage("user")["should_limit"] for _ in range(2)] == [True, True]
    assert usage("user", increment=False)["count"] == 9  # read, not counted
    assert usage("fresh", increment=False)["count"] == 0
    assert usage("user", increment=False)["count"] == 9
    key = next(key for key in own_redis_keys(own_redis) if b"rl:" in key)
    assert 0 < redis_client(own_redis).ttl(key) <= 60 + EXPIRATION_FUDGE  # the window, and django-ratelimit's margin


def test_a_counted_request_is_one_round_trip(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = cache_settings(own_redis)
    usage("user")  # the window's first: a connection is opened, the scripts loaded
    with round_trips() as sent:
        assert usage("user")["count"] == 2
        assert sent[0] == 1
        assert usage("user", increment=False)["count"] == 2
        assert sent[0] == 2


def test_two_counts_and_a_read_are_one_round_trip(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = cache_settings(own_redis)
    cache = caches["default"]
    cache.set("site-token", {"token": "a.b.c"}, 60)
    usage("user")

    def count_both() -> list[int]:
        return [usage("user")["count"], usage("ip")["count"]]

    with round_trips() as sent:
        counts, read = cache.counted_with(count_both, ["site-token", "nothing-here"])
    assert sent[0] == 1
    assert counts == [2, 1]
    assert read == {"site-token": {"token": "a.b.c"}}
    assert [usage("user")["count"], usage("ip")["count"]] == [3, 2]  # each counted once, not twice


def test_a_count_the_second_run_makes_alone_goes_to_redis_on_its_own(own_redis: RedisServer, settings: Any) -> None:
    """django-ratelimit's window turning between the two runs: the new window's key is counted live."""
    settings.CACHES = cache_settings(own_redis)
    cache = caches["default"]
    usage("warm-up")  # a connection opened, the script loaded
    runs = iter(["before", "after"])

    def count_in_a_window() -> int:
        return int(usage(next(runs))["count"])

    with round_trips() as sent:
        count, _ = cache.counted_with(count_in_a_window)
    assert count == 1
    assert sent[0] == 2
    assert usage("after", increment=False)["count"] == 1


def test_counting_that_fails_sends_nothing_and_forgets_nothing_of_it(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = cache_settings(own_redis)
    cache = caches["default"]

    def refuses() -> None:
        usage("user")
        raise LookupError("a setting the counting reads is wrong")

    with round_trips() as sent, pytest.raises(LookupError):
        cache.counted_with(refuses)
    assert sent[0] == 0
    assert usage("user")["count"] == 1  # counted for real now, from Redis


def test_incr_is_one_round_trip_and_refuses_a_missing_key(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = cache_settings(own_redis)
    cache = caches["default"]
    cache.set("counter", 10)
    cache.incr("counter", 0)  # the script loaded
    with round_trips() as sent:
        assert cache.incr("counter", 5) == 15
        assert cache.decr("counter") == 14
    assert sent[0] == 2
    with pytest.raises(ValueError, match="not found"):
        cache.incr("missing")


def test_other_keys_keep_djangos_add(own_redis: RedisServer, settings: Any) -> None:
    """Only django-ratelimit's counters count on `add`: any other whole number is added, or not, as Django's."""
    settings.CACHES = cache_settings(own_redis)
    cache = caches["default"]
    assert cache.add("lock", 1, 10)
    assert not cache.add("lock", 1, 10)
    assert cache.get("lock") == 1
    assert cache.add("rl:note", "text", 10)  # not a number: Django's add
    assert not cache.add("rl:note", "other", 10)
    assert cache.get("rl:note") == "text"


def test_a_count_kept_for_the_next_incr_is_forgotten_by_any_other_operation(
    own_redis: RedisServer, settings: Any
) -> None:
    settings.CACHES = cache_settings(own_redis)
    cache = caches["default"]
    assert cache.add("rl:window", 1, 60)
    assert not cache.add("rl:window", 1, 60)  # counted: 2, kept for the incr
    cache.delete("rl:window")
    with pytest.raises(ValueError, match="not found"):
        cache.incr("rl:window")


def test_each_thread_keeps_its_own_count(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = cache_settings(own_redis)
    cache = RedisCache(own_redis.url, {"KEY_PREFIX": "site-a"})  # one instance shared by the threads
    cache.add("rl:shared", 1, 60)
    counts: list[int] = []
    start = threading.Barrier(4)

    def count() -> None:
        start.wait(timeout=10)
        for _ in range(50):
            if not cache.add("rl:shared", 1, 60):
                counts.append(cache.incr("rl:shared"))

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(counts) == list(range(2, 202))  # every count answered once, none lost or repeated


def test_sites_with_different_prefixes_keep_their_counts_apart(own_redis: RedisServer) -> None:
    site_a = RedisCache(own_redis.url, {"KEY_PREFIX": "site-a"})
    site_b = RedisCache(own_redis.url, {"KEY_PREFIX": "site-b"})
    assert site_a.add("rl:user", 1, 60)
    assert not site_a.add("rl:user", 1, 60)
    assert site_a.incr("rl:user") == 2
    assert site_b.add("rl:user", 1, 60)


def test_one_redis_client_serves_every_operation(own_redis: RedisServer) -> None:
    cache = RedisCache(own_redis.url, {})
    assert cache._cache.get_client(write=True) is cache._cache.get_client(write=False)


# --- the route on it ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["login", "site"])
def test_the_routes_cached_answer_is_one_round_trip(own_redis: RedisServer, settings: Any, mode: str) -> None:
    settings.CACHES = cache_settings(own_redis)
    settings.SPORTS_TOKEN_SHARING = mode
    browser = logged_in_browser()
    first = post_token(browser)
    assert first.status_code == 200
    with round_trips() as sent:
        again = post_token(browser)
    assert again.status_code == 200
    assert again.json() == first.json()
    assert sent[0] == 1


@pytest.mark.parametrize("mode", ["login", "site"])
def test_the_routes_limits_count_on_it_as_on_djangos_cache(own_redis: RedisServer, settings: Any, mode: str) -> None:
    settings.CACHES = cache_settings(own_redis)
    settings.SPORTS_TOKEN_SHARING = mode
    settings.SPORTS_TOKEN_RATE = "3/m"
    browser = logged_in_browser()
    statuses = [post_token(browser).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = post_token(browser)
    assert refused.json()["error"] == "rate_limited"
    assert int(refused["Retry-After"]) >= 1


def test_the_route_is_503_while_redis_is_down_then_recovers(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = cache_settings(own_redis)
    browser = logged_in_browser()
    assert post_token(browser).status_code == 200
    own_redis.stop()
    response = post_token(browser)
    assert response.status_code == 503
    assert response.json()["error"] == "rate_limit_unavailable"
    own_redis.start()
    assert post_token(browser).status_code == 200


@pytest.mark.parametrize("mode", ["login", "site"])
def test_the_route_is_503_within_the_bound_when_redis_stops_answering(
    own_redis: RedisServer, settings: Any, mode: str
) -> None:
    settings.CACHES = cache_settings(own_redis, socket_timeout=HUNG_REDIS_SECONDS, socket_connect_timeout=1)
    settings.SPORTS_TOKEN_SHARING = mode
    browser = logged_in_browser()
    assert post_token(browser).status_code == 200
    own_redis.hang()
    try:
        started = time.monotonic()
        response = post_token(browser)
        elapsed = time.monotonic() - started
    finally:
        own_redis.resume()
    assert response.status_code == 503
    assert response.json()["error"] == "rate_limit_unavailable"
    assert elapsed < ANSWERED_WITHIN_SECONDS


def own_redis_keys(server: RedisServer) -> list[bytes]:
    return list(redis_client(server).keys("*"))


def redis_client(server: RedisServer) -> Any:
    import redis

    return redis.Redis.from_url(server.url)
