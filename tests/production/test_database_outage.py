"""The mint route when the store authentication reads goes away and comes back.

`make serve` (config.serve) in production, its PostgreSQL reached through a TCP proxy the test
cuts: while the database is unreachable every mint is 503 `authentication_unavailable` JSON (with
`Retry-After` and `no-store`), never Django's HTML 500; once the proxy is back the route mints.
And sessions kept in a Redis of the test's own, cut away or stopped: the same 503, then the route
answers from the store again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.mintroute.conftest import logged_in_browser, post_token
from tests.production.cluster import Cluster, logged_in, mint, require_engines
from tests.production.tcp_proxy import TcpProxy
from tests.production.test_make_serve import PRODUCTION
from tests.redis_server import RedisServer

POSTGRES_PORT = 5432
ANSWERED_WITHIN_SECONDS = 10

# Serial: it asserts a wall-clock bound on real processes, and collectstatic writes this checkout's staticfiles/.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def proxied_node() -> Iterator[tuple[Cluster, TcpProxy]]:
    """One production node of `make serve` whose DATABASE_URL goes through `proxy`."""
    require_engines()
    proxy = TcpProxy(POSTGRES_PORT)
    proxy.start()
    node = Cluster(**PRODUCTION)
    node.environment["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{proxy.port}/{node.database}"
    try:
        node.manage("collectstatic", "--no-input", "--verbosity", "0")  # as `make serve` does before it serves
        node.start(events_in=(False,))
        yield node, proxy
    finally:
        proxy.restore()  # node.stop() drops its database through the proxy's target directly
        node.stop()
        proxy.stop()


def assert_authentication_unavailable(answer: Any, headers: Any) -> None:
    assert answer.status_code == 503, answer.content
    assert headers["Content-Type"] == "application/json"
    assert answer.json()["error"] == "authentication_unavailable"
    assert int(headers["Retry-After"]) > 0
    assert headers["Cache-Control"] == "no-store"


def test_a_database_outage_is_503_json_rows_then_the_route_recovers(proxied_node: tuple[Cluster, TcpProxy]) -> None:
    node, proxy = proxied_node
    browser = logged_in(node.urls[0])
    try:
        assert_outage_then_recovery(browser, proxy)
    finally:
        browser.close()


def assert_outage_then_recovery(browser: httpx2.Client, proxy: TcpProxy) -> None:
    assert mint(browser).status_code == 200

    proxy.cut()
    try:
        for _ in range(5):
            started = time.monotonic()
            answer = mint(browser)
            assert time.monotonic() - started < ANSWERED_WITHIN_SECONDS
            assert_authentication_unavailable(answer, answer.headers)
            assert "Traceback" not in answer.text
    finally:
        proxy.restore()

    recovered = mint(browser)
    assert recovered.status_code == 200, recovered.text
    assert set(recovered.json()) == {"token", "expiresAt"}


def test_a_cache_session_store_that_goes_away_is_503_then_recovers(
    own_redis: RedisServer,
    settings: Any,
    api_key: str,
) -> None:
    proxy = TcpProxy(own_redis.port)  # cut and restored, so that the sessions in Redis survive the outage
    proxy.start()
    try:
        settings.SPORTS_API_KEY = api_key
        settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
        location = f"redis://127.0.0.1:{proxy.port}/0"
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}
        browser = logged_in_browser()  # its session lives in that Redis
        assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200

        proxy.cut()
        for _ in range(3):
            answer = post_token(browser, '{"reason": "unauthorized"}')
            assert_authentication_unavailable(answer, answer)
            assert "sessionid" not in answer.cookies  # the session cookie is kept, not deleted

        proxy.restore()
        assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200  # the same login
    finally:
        proxy.stop()


def test_a_cache_session_store_that_stops_is_503_not_a_logout(
    own_redis: RedisServer,
    settings: Any,
    api_key: str,
) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}}
    browser = logged_in_browser()
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200
    own_redis.stop()
    answer = post_token(browser, '{"reason": "unauthorized"}')
    assert_authentication_unavailable(answer, answer)
    own_redis.start()  # an empty Redis (no persistence): the session is gone, so the caller logs in again
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 401
