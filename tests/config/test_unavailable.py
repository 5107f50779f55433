"""config.unavailable: the login pages answer 503 with Retry-After and a page that says to try again
shortly while a store they need is unreachable, never a 500, and recover with it. Here the store is
the sessions' Redis (a redis-server of the test's own, stopped and started again); with make serve's
PostgreSQL cut, tests/production/test_database_outage.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.redis_server import RedisServer

PASSWORD = "right-pass-123"


@pytest.fixture
def sessions_in_redis(own_redis: RedisServer, settings: Any) -> RedisServer:
    sessions = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}
    settings.CACHES = {**settings.CACHES, "sessions": sessions}
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    settings.SESSION_CACHE_ALIAS = "sessions"
    return own_redis


def assert_polite(response: Any) -> None:
    assert response.status_code == 503, response.content
    assert int(response["Retry-After"]) > 0
    assert response["Cache-Control"] == "no-store"
    assert b"try again shortly" in response.content
    assert b"Traceback" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_a_login_while_the_session_store_is_stopped_is_503_then_it_logs_in(
    sessions_in_redis: RedisServer, path: str
) -> None:
    User.objects.create_user("alice", password=PASSWORD, is_staff=True)
    browser = Client(raise_request_exception=False)  # as a real server: never raises into its client
    sessions_in_redis.stop()
    assert_polite(browser.post(path, {"username": "alice", "password": PASSWORD}))

    sessions_in_redis.start()
    assert browser.post(path, {"username": "alice", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_a_logout_while_the_session_store_is_stopped_logs_the_browser_out_never_a_500(
    sessions_in_redis: RedisServer,
) -> None:
    # The cache backend reads an unreachable store as "no session": nothing to delete, so the logout
    # needs no store and answers as usual, deleting the browser's session cookie.
    browser = Client(raise_request_exception=False)
    browser.force_login(User.objects.create_user("alice", password=PASSWORD))
    sessions_in_redis.stop()
    response = browser.post("/accounts/logout/")
    assert response.status_code == 200, response.content
    assert response.cookies["sessionid"].value == ""
