"""Where the tests keep their data: the PostgreSQL and the Redis named by two environment variables, read once.

`TEST_DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/test) names a PostgreSQL server, its role
(and password, if any) and a database on it that already exists: the tests connect to that database only to
create and drop their own. Like Django's test runner with its `test_` databases, each test that needs
PostgreSQL creates a throwaway database on that server (sports_cluster_..., sports_template_...,
sports_serve_..., sports_recipe_...) and drops it when it ends; the role needs CREATEDB.

`TEST_REDIS_URL` (default redis://127.0.0.1:6379/8) names a Redis server (with its password, and TLS with
`rediss://`, if any) and the FIRST of the REDIS_DATABASES databases the tests use: that one and the next seven
(one per purpose and pytest-xdist worker, four workers of two), each flushed by the tests that use it. They
use no other database of that server. Redis has databases 0 to 15, so the first can be 8 at most.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/8"
REDIS_DATABASES = 8  # four pytest-xdist workers, two purposes each (tests/production/cluster.py)

DATABASE_URL = os.environ.get("TEST_DATABASE_URL") or DEFAULT_DATABASE_URL  # the maintenance database
REDIS_URL = os.environ.get("TEST_REDIS_URL") or DEFAULT_REDIS_URL  # the first database of the range


def postgres_url(database: str, *, port: int | None = None) -> str:
    """The URL of `database` on the tests' PostgreSQL server (same role, password and options); with `port`,
    through a proxy listening on 127.0.0.1:`port` instead of the server's own address."""
    parts = urlsplit(DATABASE_URL)
    netloc = parts.netloc
    if port is not None:
        credentials = netloc.rpartition("@")[0]
        netloc = f"{credentials}@127.0.0.1:{port}" if credentials else f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=netloc, path=f"/{database}"))


def postgres_address() -> tuple[str, int]:
    """The host and port of the tests' PostgreSQL server (what a proxy in front of it forwards to)."""
    parts = urlsplit(DATABASE_URL)
    return parts.hostname or "127.0.0.1", parts.port or 5432


def postgres_where() -> str:
    """host:port of the PostgreSQL server, for a sentence (never its password)."""
    host, port = postgres_address()
    return f"{host}:{port}"


def first_redis_database() -> int:
    """The database TEST_REDIS_URL names (0 without one), the first of the tests' range."""
    path = urlsplit(REDIS_URL).path.strip("/")
    if path and not path.isdigit():
        raise RuntimeError(f"TEST_REDIS_URL names no Redis database number ({path!r}): end it with /N, e.g. /8.")
    return int(path or 0)


def redis_url(index: int) -> str:
    """The URL of the `index`th database (0 to REDIS_DATABASES - 1) of the tests' range on their Redis."""
    first = first_redis_database()
    if first + REDIS_DATABASES - 1 > 15:
        raise RuntimeError(
            f"TEST_REDIS_URL names Redis database {first}; the tests use it and the next {REDIS_DATABASES - 1},"
            f" and Redis has databases 0 to 15: name one of 0 to {16 - REDIS_DATABASES}."
        )
    if not 0 <= index < REDIS_DATABASES:
        raise RuntimeError(
            f"The tests have {REDIS_DATABASES} Redis databases (0 to {REDIS_DATABASES - 1}), not a {index}th:"
            " run the production tests on at most four workers."
        )
    return urlunsplit(urlsplit(REDIS_URL)._replace(path=f"/{first + index}"))


def redis_where() -> str:
    """host:port of the Redis server, for a sentence (never its password)."""
    parts = urlsplit(REDIS_URL)
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or 6379}"
