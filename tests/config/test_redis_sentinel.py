"""config/redis_sentinel.py against real processes: a Redis primary, its replica and Sentinels of the
test's own (redis-server --sentinel), the cache found through them, and REDIS_SENTINELS as settings read it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from django_ratelimit.core import get_usage

from config.redis_sentinel import SentinelRedisCache, cache_settings, channel_layer_host, sentinel_addresses
from tests.production.cluster import free_port
from tests.redis_server import RedisServer, SentinelServer, require_redis_server, round_trips

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BOUNDS = {"socket_connect_timeout": 2.0, "socket_timeout": 2.0}
URL = f"redis://{SentinelServer.SERVICE}/0"


@pytest.fixture(autouse=True)
def _redis_server_installed() -> None:
    require_redis_server()


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[RedisServer, RedisServer, SentinelServer]]:
    """A primary, its replica (in sync) and one Sentinel watching them, each stopped after the test."""
    primary = RedisServer()
    replica = RedisServer(primary)
    sentinel = SentinelServer(primary, tmp_path)
    started: list[RedisServer] = []
    try:
        for server in (primary, replica, sentinel):
            server.start()
            started.append(server)
        replica.wait_in_sync()
        yield primary, replica, sentinel
    finally:
        for server in reversed(started):
            server.stop()


def site_cache(sentinels: list[tuple[str, int]]) -> SentinelRedisCache:
    return SentinelRedisCache(URL, cache_settings(URL, sentinels, BOUNDS))


def holds(server: RedisServer, key: str) -> bool:
    return any(key.encode() in name for name in redis.Redis(port=server.port).keys("*"))


def test_the_cache_reads_and_writes_the_primary_sentinel_names(
    stores: tuple[RedisServer, RedisServer, SentinelServer],
) -> None:
    primary, _replica, sentinel = stores
    cache = site_cache([("127.0.0.1", sentinel.port)])
    cache.set("where", "primary", 60)
    assert cache.get("where") == "primary"
    assert cache.add("counted", 1, 60)
    assert cache.incr("counted") == 2
    assert holds(primary, "where")
    client = cache._cache.get_client(write=False)  # reads too: never a replica
    assert client.connection_pool.get_master_address() == ("127.0.0.1", primary.port)


def test_after_a_failover_the_same_cache_follows_the_new_primary_without_a_restart(
    stores: tuple[RedisServer, RedisServer, SentinelServer],
) -> None:
    primary, replica, sentinel = stores
    cache = site_cache([("127.0.0.1", sentinel.port)])
    cache.set("before", 1, 60)
    assert redis.Redis(port=primary.port).wait(1, 2000) == 1  # replication is asynchronous: kept, not lost
    assert sentinel.fail_over() == replica.port
    primary.make_replica_of(replica.port)  # it answers the pooled connection READONLY: the pool asks Sentinel again
    deadline = time.monotonic() + 5
    errors = 0
    while True:
        try:
            cache.set("after", 2, 60)
            break
        except redis.RedisError:
            errors += 1
            assert time.monotonic() < deadline, "the cache did not follow the new primary within 5 s"
            time.sleep(0.05)
    assert cache.get("before") == 1
    assert cache.get("after") == 2
    assert holds(replica, "after")  # written on the promoted replica
    assert errors <= 1, f"{errors} calls failed after the failover"  # the one on the READONLY connection
    assert primary.port != replica.port


def test_a_lookup_at_a_dead_sentinel_is_bounded_and_asks_the_next(
    stores: tuple[RedisServer, RedisServer, SentinelServer],
) -> None:
    primary, _replica, sentinel = stores
    dead = ("127.0.0.1", free_port())  # nothing listens: refused, not retried with a backoff
    cache = site_cache([dead, ("127.0.0.1", sentinel.port)])
    started = time.monotonic()
    cache.set("bounded", 1, 60)
    assert time.monotonic() - started < 0.5
    assert holds(primary, "bounded")


def test_with_every_sentinel_dead_a_call_fails_at_once() -> None:
    cache = site_cache([("127.0.0.1", free_port()), ("127.0.0.1", free_port())])
    started = time.monotonic()
    with pytest.raises(redis.ConnectionError, match="No master found"):
        cache.set("nowhere", 1, 60)
    assert time.monotonic() - started < 0.5


def test_sentinels_that_require_a_password_are_asked_with_redis_sentinel_password(tmp_path: Path) -> None:
    primary = RedisServer()
    sentinel = SentinelServer(primary, tmp_path, password="sentinel-pass-123")
    try:
        primary.start()
        sentinel.start()
        address = [("127.0.0.1", sentinel.port)]
        cache = SentinelRedisCache(URL, cache_settings(URL, address, BOUNDS, "sentinel-pass-123"))
        cache.set("guarded", 1, 60)
        assert holds(primary, "guarded")
        with pytest.raises(redis.ConnectionError, match="No master found"):  # the Sentinel refused to name it
            site_cache(address).set("unasked", 1, 60)
    finally:
        sentinel.stop()
        primary.stop()


def test_sentinel_addresses_read_host_port_lists_and_refuse_anything_else() -> None:
    assert sentinel_addresses("") == []
    assert sentinel_addresses("a:26379, b.example:26380,[::1]:5") == [("a", 26379), ("b.example", 26380), ("::1", 5)]
    for malformed in ("a", "a:", ":26379", "a:port", "a:70000", "a:1,,b:2"):
        with pytest.raises(ImproperlyConfigured, match=r"REDIS_SENTINELS cannot be read at .* write each Sentinel"):
            sentinel_addresses(malformed)


def test_the_channel_layer_gets_channels_redis_sentinel_keys() -> None:
    host = channel_layer_host("rediss://:secret@svc/3", [("s1", 26379)], {"socket_timeout": 15})
    assert (host["master_name"], host["sentinels"]) == ("svc", [("s1", 26379)])
    assert (host["db"], host["password"], host["ssl"], host["socket_timeout"]) == (3, "secret", True, 15)
    assert host["sentinel_kwargs"]["retry"].get_retries() == 0
    assert "password" not in host["sentinel_kwargs"]  # REDIS_URL's password is the primary's only
    assert "address" not in host
    guarded = channel_layer_host("redis://svc/0", [("s1", 26379)], {}, "sentinel-pass-123")
    assert guarded["sentinel_kwargs"]["password"] == "sentinel-pass-123"


BACKEND_AND_HOST_KEYS = (
    "print(json.dumps([s.CACHES['default']['BACKEND'], sorted(s.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0])]))"
)


def settings_of(*, shown: str = BACKEND_AND_HOST_KEYS, **environment: str) -> subprocess.CompletedProcess[str]:
    """What `shown` (a Python statement with the settings as `s`) prints under `environment`."""
    script = f"import json, django; django.setup(); from django.conf import settings as s; {shown}"
    return subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_ENV_FILE": "", **environment},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("environment", "said"),
    [
        ({"REDIS_URL": URL, "REDIS_SENTINELS": "s1:26379,s2"}, "REDIS_SENTINELS cannot be read at 's2'"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/0", "REDIS_SENTINELS": "s1:26379"}, "REDIS_URL names no Sentinel"),
        ({"REDIS_URL": "", "REDIS_SENTINELS": "s1:26379"}, "REDIS_SENTINELS is set without REDIS_URL"),
    ],
)
def test_settings_refuse_a_sentinel_setting_they_cannot_use_with_a_sentence(
    environment: dict[str, str], said: str
) -> None:
    completed = settings_of(**environment)
    assert completed.returncode != 0
    assert said in completed.stderr.splitlines()[-1]


def test_settings_with_sentinels_give_the_cache_and_the_channel_layer_sentinel_hosts() -> None:
    with_sentinels: Any = settings_of(REDIS_URL=URL, REDIS_SENTINELS="s1:26379")
    assert with_sentinels.returncode == 0, with_sentinels.stderr
    assert with_sentinels.stdout.strip() == (
        '["config.redis_sentinel.SentinelRedisCache", '
        '["db", "master_name", "sentinel_kwargs", "sentinels", "socket_connect_timeout", "socket_timeout"]]'
    )
    without: Any = settings_of(REDIS_URL="redis://127.0.0.1:6379/0", REDIS_SENTINELS="")
    assert without.stdout.strip() == (
        '["mintroute.redis_cache.RedisCache", ["address", "socket_connect_timeout", "socket_timeout"]]'
    )


def test_redis_sentinel_password_reaches_the_cache_and_the_channel_layers_sentinels_only() -> None:
    shown = (
        "print(json.dumps([s.CACHES['default']['OPTIONS']['sentinel_password'],"
        " s.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0]['sentinel_kwargs']['password'],"
        " s.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0].get('password')]))"
    )
    completed = settings_of(shown=shown, REDIS_URL=URL, REDIS_SENTINELS="s1:26379", REDIS_SENTINEL_PASSWORD="$pw 1")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == '["$pw 1", "$pw 1", null]'  # as written; never the primary's


def test_the_channel_layer_delivers_through_the_primary_sentinel_names(
    stores: tuple[RedisServer, RedisServer, SentinelServer],
) -> None:
    from channels_redis.pubsub import RedisPubSubChannelLayer

    _primary, _replica, sentinel = stores
    host = channel_layer_host(URL, [("127.0.0.1", sentinel.port)], {"socket_timeout": 15, "socket_connect_timeout": 5})

    async def round_trip() -> dict[str, Any]:
        layer = RedisPubSubChannelLayer(hosts=[host])
        try:
            channel = await layer.new_channel()
            receiving = asyncio.ensure_future(layer.receive(channel))
            await asyncio.sleep(0.2)  # pub/sub: subscribed before the send
            await layer.send(channel, {"type": "match.event", "n": 1})
            return await asyncio.wait_for(receiving, 5)
        finally:
            # channels_redis's flush closes the primary's connections, not its Sentinel clients' (a site's
            # layer keeps them for the process's life): closed here, or they are collected unclosed.
            for shard in layer._get_layer()._shards:
                if shard._redis is not None:
                    for client in shard._redis.connection_pool.sentinel_manager.sentinels:
                        await client.aclose()
            await layer.flush()

    assert asyncio.run(round_trip()) == {"type": "match.event", "n": 1}


def test_through_sentinel_the_rate_limits_count_in_one_round_trip(
    stores: tuple[RedisServer, RedisServer, SentinelServer], settings: Any
) -> None:
    """The Sentinel-aware cache is mintroute.redis_cache's counting cache too: one round trip per counted request."""
    _primary, _replica, sentinel = stores
    settings.CACHES = {"default": cache_settings(URL, [("127.0.0.1", sentinel.port)], BOUNDS)}
    request = RequestFactory().post("/")

    def count() -> int:
        usage = get_usage(request, group="sentinel", key=lambda group, request: "user", rate="5/m", increment=True)
        return int(usage["count"])

    assert count() == 1  # the window's first: the primary looked up, the connection opened, the scripts loaded
    with round_trips() as sent:
        assert [count(), count()] == [2, 3]
    assert sent == [2]
