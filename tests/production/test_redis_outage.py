"""The mint route when its Redis goes away, or stops answering, and comes back: 503
rate_limit_unavailable within a bound, then 200."""

from __future__ import annotations

import time
from typing import Any

from tests.mintroute.conftest import logged_in_browser, post_token
from tests.production.cluster import Cluster, logged_in, mint, require_engines
from tests.production.test_make_serve import PRODUCTION
from tests.redis_server import RedisServer

# config/settings.py gives each Redis call 2 s (redis-py's own default is 5 s); the first call that
# times out ends the request.
HUNG_REDIS_ANSWERED_WITHIN_SECONDS = 4


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
