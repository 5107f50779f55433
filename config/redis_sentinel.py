"""Redis through Sentinel: the site's cache and channel layer follow the primary Sentinel names.

With `REDIS_SENTINELS` (`host:port,host:port`), `REDIS_URL` (`redis://[:password@]SERVICE/DB`, or
`rediss://`) names a Sentinel service rather than a host, as django-redis reads it. The Sentinel client
is redis-py's own `redis.sentinel` (and `redis.asyncio.sentinel` under channels_redis): the library the
site already locks for Redis, maintained with it, and the one whose pool leaves a former primary by
itself (a ReadOnlyError or a broken connection makes it ask Sentinel again), so no restart follows a
failover.

A module of its own because Django's built-in `RedisCache` reads every part of LOCATION as a host:
`SentinelRedisCache` keeps everything of it but the pool, which comes from Sentinel (the primary only,
for reads and writes alike: a replica's reads may lag the rate limits' counts).

Sentinels that require a password of their own (Sentinel's `requirepass`, which is not the Redis
servers') get `REDIS_SENTINEL_PASSWORD`, passed here as `sentinel_password`; REDIS_URL's password is
the primary's only, as a Sentinel without a password of its own refuses any.

Every call is bounded: Sentinel's connections and the primary's get the site's socket timeouts, and
no retries. (redis-py's `Redis` retries three times with a backoff of up to 10 s by default, which the
clients it makes for each Sentinel inherit: 4 s per lookup measured at one dead Sentinel.) A lookup
asks each Sentinel once, in turn, and the one that answered is asked first next time.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.core.exceptions import ImproperlyConfigured
from redis import Redis

from mintroute.redis_cache import CountingInOneRoundTrip

Address = tuple[str, int]
CLIENT_OPTIONS = ("serializer", "pool_class", "parser_class")  # Django's client's own, not a connection's

SENTINELS_FORM = "REDIS_SENTINELS=sentinel1:26379,sentinel2:26379,sentinel3:26379"
URL_FORM = "REDIS_URL=redis://:password@SERVICE/0 (or rediss://), its host part the Sentinel service name"


def sentinel_addresses(value: str) -> list[Address]:
    """The `host:port` pairs of REDIS_SENTINELS (none for ""); ImproperlyConfigured, in one sentence,
    for anything else."""
    addresses: list[Address] = []
    for item in value.split(",") if value.strip() else []:
        host, _, port = item.strip().rpartition(":")
        host = host.strip("[]")  # an IPv6 address written [::1]:26379
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ImproperlyConfigured(
                f"REDIS_SENTINELS cannot be read at {item.strip()!r}: write each Sentinel as host:port, "
                f"comma-separated, e.g. {SENTINELS_FORM}."
            )
        addresses.append((host, int(port)))
    return addresses


def service_of(redis_url: str) -> str:
    """The Sentinel service REDIS_URL names; ImproperlyConfigured when it names a host and port instead."""
    parts = urlsplit(redis_url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname or _has_port(parts.netloc):
        raise ImproperlyConfigured(
            f"REDIS_URL names no Sentinel service while REDIS_SENTINELS is set: write it as {URL_FORM}."
        )
    return parts.hostname


def _has_port(netloc: str) -> bool:
    return ":" in netloc.rpartition("@")[2]


def cache_settings(
    redis_url: str, sentinels: list[Address], bounds: dict[str, float], sentinel_password: str = ""
) -> dict[str, Any]:
    """Django's cache settings for the primary of the service `redis_url` names, found through `sentinels`
    (each asked with `sentinel_password`, if any)."""
    service_of(redis_url)  # refused here, at start, rather than at the first request
    password = {"sentinel_password": sentinel_password} if sentinel_password else {}
    return {
        "BACKEND": "config.redis_sentinel.SentinelRedisCache",
        "LOCATION": redis_url,
        "OPTIONS": {**bounds, "sentinels": sentinels, **password},
    }


def channel_layer_host(
    redis_url: str, sentinels: list[Address], bounds: dict[str, float], sentinel_password: str = ""
) -> dict[str, Any]:
    """channels_redis's host entry for the primary of the service `redis_url` names (its `master_name`,
    `sentinels` and `sentinel_kwargs` keys; the rest are the primary's connection's), each Sentinel asked
    with `sentinel_password`, if any."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.connection import parse_url

    connection = parse_url(redis_url)  # type: ignore[no-untyped-call]  # redis-py's, untyped
    connection.pop("host", None)
    ssl = connection.pop("connection_class", None) is not None  # rediss://
    return {
        "master_name": service_of(redis_url),
        "sentinels": sentinels,
        "sentinel_kwargs": {
            **bounds,
            "ssl": ssl,
            "retry": Retry(NoBackoff(), 0),
            **({"password": sentinel_password} if sentinel_password else {}),
        },
        **connection,
        **({"ssl": True} if ssl else {}),
        **bounds,
    }


class SentinelCacheClient(RedisCacheClient):
    """Django's Redis cache client whose every client, for reads and writes, is the primary's, as Sentinel
    names it: one pool per process, made at the first call (as Django's own client makes its pools)."""

    _client: Any  # Django's: what makes a redis-py client of a pool (set in its __init__, unknown to its stubs)

    def __init__(
        self, servers: list[str], *, sentinels: list[Address], sentinel_password: str = "", **options: Any
    ) -> None:
        super().__init__(servers, **options)
        self._url = servers[0]
        self._sentinels = sentinels
        self._sentinel_password = sentinel_password
        self._connection_options = {name: value for name, value in options.items() if name not in CLIENT_OPTIONS}
        self._primary_pool: Any = None

    def get_client(self, key: Any = None, *, write: bool = False) -> Redis:
        if self._primary_pool is None:
            self._primary_pool = self._pool_of_the_primary()
        client: Redis = self._client(connection_pool=self._primary_pool)  # one per pool: CountingInOneRoundTrip
        return client

    def _pool_of_the_primary(self) -> Any:
        from redis.backoff import NoBackoff
        from redis.connection import parse_url
        from redis.retry import Retry
        from redis.sentinel import Sentinel, SentinelConnectionPool

        connection = parse_url(self._url)  # type: ignore[no-untyped-call]  # redis-py's, untyped
        connection.pop("host", None)
        ssl = connection.pop("connection_class", None) is not None  # rediss://
        bounds = {name: value for name, value in self._connection_options.items() if name.startswith("socket_")}
        no_retries = Retry(NoBackoff(), 0)
        password = {"password": self._sentinel_password} if self._sentinel_password else {}
        sentinel = Sentinel(  # type: ignore[no-untyped-call]
            self._sentinels, sentinel_kwargs={**bounds, "ssl": ssl, "retry": no_retries, **password}
        )
        return SentinelConnectionPool(  # type: ignore[no-untyped-call]
            service_of(self._url), sentinel, **connection, ssl=ssl, retry=no_retries, **self._connection_options
        )


class SentinelRedisCache(CountingInOneRoundTrip, RedisCache):
    """Django's Redis cache, its connections to the primary Sentinel names (OPTIONS["sentinels"]), counting
    the route's rate limits in one round trip as the site's cache does without Sentinel (mintroute.redis_cache)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SentinelCacheClient
