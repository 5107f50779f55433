"""The mint route when its Redis goes away and comes back: 503 rate_limit_unavailable, then 200."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.mintroute.conftest import logged_in_browser, post_token
from tests.production.cluster import free_port


class RedisServer:
    """A redis-server of the test's own, on a free port, that the test can stop and start."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)  # noqa: S603 - fixed command
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed")
        pytest.skip("redis-server is not installed")
    server = RedisServer()
    server.start()
    yield server
    server.stop()


def test_redis_down_is_503_and_recovery_is_automatic(own_redis: RedisServer, settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}}
    browser = logged_in_browser()
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200

    own_redis.stop()
    response = post_token(browser, '{"reason": "unauthorized"}')
    assert response.status_code == 503
    assert response.json()["error"] == "rate_limit_unavailable"

    own_redis.start()  # same port: the cache's connection pool reconnects on its own
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200
