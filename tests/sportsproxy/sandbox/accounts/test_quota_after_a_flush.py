"""An account's own quota holds for its tokens after the cache loses its copy: a real Redis of the
test's own, flushed under a real server process of this project (uvicorn serving config.asgi)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis

from tests.production.cluster import PROJECT_ROOT, free_port
from tests.redis_server import RedisServer

START_SECONDS = 30
QUOTA = 5


@pytest.fixture
def environment(own_redis: RedisServer, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_ENV_FILE": "",
        "DJANGO_DEBUG": "1",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_hex(32),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": own_redis.url,
        "SPORTS_BASE_URL": "",
        "SPORTS_SANDBOX": "1",
        "SPORTS_SANDBOX_EVENTS": "0",
        "DJANGO_LOG_LEVEL": "WARNING",
    }


@pytest.fixture
def server(environment: dict[str, str]) -> Iterator[str]:
    """The base URL of this project served by uvicorn in another process, on a migrated database."""
    _manage(environment, "migrate", "--no-input")
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off"]
    process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=environment)  # noqa: S603 - fixed command
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(lambda: httpx2.get(f"{url}/healthz", timeout=1).raise_for_status(), "the server")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_an_accounts_own_quota_holds_for_its_tokens_after_a_flushall(
    server: str, environment: dict[str, str], own_redis: RedisServer
) -> None:
    # The dashboard's change: the account's save mirrors its quota into the server's cache.
    secret = _manage(
        environment,
        "shell",
        "-c",
        "from sportsproxy.sandbox.accounts.keys import issue_key; from sportsproxy.sandbox.models import Account; "
        f"print(issue_key(Account.objects.create(name='flushed', tier='growth', requests_per_minute={QUOTA}), "
        "'test')[1])",
    ).split()[-1]
    _not_near_the_end_of_a_minute()  # the quota counts per calendar minute: all the calls fall in one
    token = _rpc(server, "tokens.create", secret, {"ttl": 600})["result"]["token"]
    store = redis.Redis.from_url(own_redis.url)
    assert store.keys("*rpm-quota*"), "the quota was not mirrored: the test would prove nothing"

    store.flushall()  # the cache loses its copy under the running server

    answers = [_rpc(server, "matches.list", token, {"limit": 1}) for _ in range(12)]
    assert ["result" in answer for answer in answers] == [True] * QUOTA + [False] * (12 - QUOTA), answers
    assert {answer["error"]["code"] for answer in answers[QUOTA:]} == {"rate_limited"}
    assert f"limit of {QUOTA} " in answers[-1]["error"]["message"]


def _rpc(url: str, method: str, credential: str, params: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = httpx2.post(
        f"{url}/sdk/v1/rpc",
        json={"jsonrpc": "2.0", "id": "1", "method": method, "params": params},
        headers={"Authorization": f"Bearer {credential}"},
        timeout=10,
    ).json()
    return answer


def _manage(environment: dict[str, str], *arguments: str) -> str:
    completed = subprocess.run(  # noqa: S603 - this interpreter and manage.py
        [sys.executable, "manage.py", *arguments],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def _not_near_the_end_of_a_minute() -> None:
    """Wait (15 s at most) for a new minute when fewer than 15 s of this one are left."""
    into_the_minute = time.time() % 60
    if into_the_minute > 45:
        time.sleep(60 - into_the_minute + 0.1)


def _wait_for(ready: Any, what: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            ready()
            return
        except (redis.ConnectionError, httpx2.HTTPError):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not start within {START_SECONDS} s") from None
            time.sleep(0.1)
