"""The mint route when its Redis goes away, or stops answering, and comes back: 503
rate_limit_unavailable within a bound, then 200."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.mintroute.conftest import logged_in_browser, post_token
from tests.production.cluster import Cluster, free_port, logged_in, mint, require_engines
from tests.production.test_make_serve import PRODUCTION

# config/settings.py gives each Redis call 2 s (redis-py's own default is 5 s); the first call that
# times out ends the request.
HUNG_REDIS_ANSWERED_WITHIN_SECONDS = 4


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

    def hang(self) -> None:
        """Stopped, not gone: the kernel still accepts connections and takes requests, nothing answers."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None:
            self.resume()  # a stopped process would never act on the terminate
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


def test_a_redis_that_stops_answering_is_503_within_the_bound_under_make_serve(own_redis: RedisServer) -> None:
    """`make serve`'s own configuration (config.serve, REDIS_URL): the cache's socket timeouts end the
    wait on a Redis that accepts connections and requests but answers none."""
    require_engines()
    node = Cluster(**PRODUCTION, REDIS_URL=own_redis.url)
    try:
        node.start(events_in=(False,))
        browser = logged_in(node.urls[0])
        assert mint(browser).status_code == 200

        own_redis.hang()
        try:
            for _ in range(3):
                started = time.monotonic()
                answer = mint(browser)  # the client itself gives up after 10 s
                assert time.monotonic() - started < HUNG_REDIS_ANSWERED_WITHIN_SECONDS
                assert answer.status_code == 503, answer.text
                assert answer.json()["error"] == "rate_limit_unavailable"
        finally:
            own_redis.resume()

        assert mint(browser).status_code == 200  # the pool dropped the timed-out connections
        browser.close()
    finally:
        node.stop()
