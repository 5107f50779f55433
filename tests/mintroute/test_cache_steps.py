"""mintroute.cache_steps: compare-then-act in one step, on a real Redis (Lua) and on a per-process cache."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from django.core.cache import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from mintroute.cache_steps import delete_if, extend_if, set_if_later
from tests.redis_server import RedisServer


@pytest.fixture(params=["redis", "locmem"])
def cache(request: pytest.FixtureRequest) -> Iterator[BaseCache]:
    if request.param == "locmem":
        yield LocMemCache("cache-steps", {})
        return
    server: RedisServer = request.getfixturevalue("own_redis")
    yield RedisCache(server.url, {"KEY_PREFIX": "site-a"})


def test_delete_if_deletes_only_what_holds_the_value(cache: BaseCache) -> None:
    cache.set("lock", "flight-1", 10)
    assert not delete_if(cache, "lock", "flight-2")  # another holder's lock stays
    assert cache.get("lock") == "flight-1"
    assert delete_if(cache, "lock", "flight-1")
    assert cache.get("lock") is None
    assert not delete_if(cache, "lock", "flight-1")


def test_extend_if_extends_only_the_holders_own_lease(cache: BaseCache) -> None:
    cache.set("lock", "flight-1", 2)
    assert not extend_if(cache, "lock", "flight-2", 60)
    assert extend_if(cache, "lock", "flight-1", 60)
    assert cache.get("lock") == "flight-1"
    assert not extend_if(cache, "gone", "flight-1", 60)


def test_set_if_later_never_replaces_a_later_value(cache: BaseCache) -> None:
    assert set_if_later(cache, "token", {"token": "first"}, 100, 60)
    assert set_if_later(cache, "token", {"token": "later"}, 200, 60)
    assert not set_if_later(cache, "token", {"token": "resumed, older"}, 150, 60)
    assert not set_if_later(cache, "token", {"token": "as old"}, 200, 60)
    assert cache.get("token") == {"token": "later"}  # read back as the cache reads anything


def test_on_redis_the_steps_use_the_caches_own_keys_and_lifetimes(own_redis: RedisServer) -> None:
    cache = RedisCache(own_redis.url, {"KEY_PREFIX": "site-a"})
    raw = redis.Redis.from_url(own_redis.url)
    cache.set("lock", "flight-1", 2)
    assert extend_if(cache, "lock", "flight-1", 60)
    assert 55_000 < raw.pttl(cache.make_and_validate_key("lock")) <= 60_000
    set_if_later(cache, "token", {"token": "t"}, 7, 30)
    assert raw.pttl(cache.make_and_validate_key("token")) > 25_000
    assert cache.get("token:order") == 7
    other_site = RedisCache(own_redis.url, {"KEY_PREFIX": "site-b"})
    assert not delete_if(other_site, "lock", "flight-1")  # another site's prefix: not its lock
    raw.close()
