"""tests/stores.py: the tests' PostgreSQL and Redis come from TEST_DATABASE_URL and TEST_REDIS_URL (read in a
fresh process, as a CI job sets them), and the production cluster builds its servers' settings from them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
READ = """
import json
from tests import stores
from tests.production import cluster
print(json.dumps({
    "maintenance": stores.DATABASE_URL,
    "cluster_database": cluster.Cluster().environment["DATABASE_URL"].rsplit("/", 1)[0],
    "database": stores.postgres_url("sports_x"),
    "proxied": stores.postgres_url("sports_x", port=1234),
    "address": list(stores.postgres_address()),
    "postgres_where": stores.postgres_where(),
    "first": stores.redis_url(0),
    "last": stores.redis_url(7),
    "cluster_redis": cluster.REDIS_URL,
    "site_mode": cluster.shared_redis_url("site-mode"),
    "redis_where": stores.redis_where(),
}))
"""


def read(script: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`script` in a new interpreter whose only TEST_* variables are `variables`."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("TEST_")}
    environment.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(  # noqa: S603 - this interpreter, our script
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings", **variables},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def stores_under(**variables: str) -> dict[str, object]:
    completed = read(READ, **variables)
    assert completed.returncode == 0, completed.stderr
    found: dict[str, object] = json.loads(completed.stdout.splitlines()[-1])
    return found


def test_without_the_variables_the_stores_are_the_local_ones() -> None:
    found = stores_under()
    assert found["maintenance"] == "postgres://postgres@127.0.0.1:5432/test"
    assert found["database"] == "postgres://postgres@127.0.0.1:5432/sports_x"
    assert found["first"] == found["cluster_redis"] == "redis://127.0.0.1:6379/8"
    assert found["last"] == "redis://127.0.0.1:6379/15"


def test_the_variables_name_the_server_the_database_and_the_first_redis_database() -> None:
    found = stores_under(
        TEST_DATABASE_URL="postgres://ci:s3cret@db.example:6543/maintenance?sslmode=require",
        TEST_REDIS_URL="rediss://:pw@cache.example:6380/3",
        PYTEST_XDIST_WORKER="gw1",
    )
    assert found["maintenance"] == "postgres://ci:s3cret@db.example:6543/maintenance?sslmode=require"
    assert found["database"] == "postgres://ci:s3cret@db.example:6543/sports_x?sslmode=require"
    assert found["cluster_database"] == "postgres://ci:s3cret@db.example:6543"  # the nodes' DATABASE_URL
    assert found["proxied"] == "postgres://ci:s3cret@127.0.0.1:1234/sports_x?sslmode=require"
    assert found["address"] == ["db.example", 6543]
    assert found["postgres_where"] == "db.example:6543"
    assert found["first"] == "rediss://:pw@cache.example:6380/3"
    assert found["last"] == "rediss://:pw@cache.example:6380/10"
    assert found["cluster_redis"] == "rediss://:pw@cache.example:6380/5"  # worker 1's first database: 3 + 2
    assert found["site_mode"] == "rediss://:pw@cache.example:6380/6"
    assert found["redis_where"] == "cache.example:6380"


def test_a_range_past_database_15_is_refused_in_a_sentence() -> None:
    completed = read("from tests import stores; stores.redis_url(0)", TEST_REDIS_URL="redis://127.0.0.1:6379/9")
    assert completed.returncode != 0
    assert "TEST_REDIS_URL names Redis database 9" in completed.stderr
    assert "name one of 0 to 8" in completed.stderr


def test_an_unreachable_postgres_is_named_by_its_address_not_its_password() -> None:
    script = "from tests.production.cluster import engines_available; print(engines_available())"
    completed = read(script, TEST_DATABASE_URL="postgres://ci:s3cret@127.0.0.1:9/test")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("PostgreSQL at 127.0.0.1:9 is not reachable")
    assert "s3cret" not in completed.stdout
