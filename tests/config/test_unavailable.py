"""config.unavailable: the site's HTML pages (the login pages, the first page, the admin) answer 503 with
Retry-After and a page that says to try again shortly while a store they need is unreachable, never a 500,
and recover with it; a missing page is still a 404, and the route keeps its JSON rows. Here the store is
the sessions' Redis (a redis-server of the test's own, stopped and started again), or the database (every
query refused); with make serve's PostgreSQL cut, tests/production/test_database_outage.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from config import project
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


# --- Every HTML page, the database unreachable ----------------------------------------------------------------


@contextmanager
def database_down(settings: Any) -> Iterator[None]:
    """Every query fails as an unreachable PostgreSQL's would (the sessions and the users are in the database);
    DEBUG off, as in production."""
    settings.DEBUG = False

    def refuse(*args: Any) -> None:
        raise OperationalError("connection to server failed: Connection refused")

    with connection.execute_wrapper(refuse):
        yield


def logged_in(**fields: Any) -> Client:
    browser = Client(raise_request_exception=False)
    browser.force_login(User.objects.create_user("alice", password=PASSWORD, **fields))
    return browser


@pytest.mark.django_db
def test_the_first_page_of_a_logged_in_user_is_503_in_the_products_name(settings: Any) -> None:
    browser = logged_in()
    with database_down(settings):
        response = browser.get(reverse("start"))
    assert_polite(response)
    assert escape(project.NAME) in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/admin/", "/admin/auth/user/", "/admin/auth/user/1/change/", "/admin/password_change/"]
)
def test_the_admins_pages_are_503(settings: Any, path: str) -> None:
    browser = logged_in(is_staff=True, is_superuser=True)
    with database_down(settings):
        assert_polite(browser.get(path))


@pytest.mark.django_db
def test_a_missing_page_is_still_a_404_in_the_products_name(settings: Any) -> None:
    browser = logged_in()
    with database_down(settings):
        response = browser.get("/nope")
    assert response.status_code == 404
    assert f"<title>Page not found · {escape(project.NAME)}</title>" in response.content.decode()


@pytest.mark.django_db
def test_the_route_keeps_its_json_rows(settings: Any) -> None:
    browser = logged_in()
    with database_down(settings):
        response = browser.post("/api/sports-token", "{}", content_type="application/json")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"] == "authentication_unavailable"  # its row, not the pages' 503


@pytest.mark.django_db
def test_the_probes_answer_as_their_own(settings: Any) -> None:
    with database_down(settings):
        alive = Client(raise_request_exception=False).get("/healthz")
        ready = Client(raise_request_exception=False).get("/readyz")
    assert alive.status_code == 200
    assert alive.json() == {"status": "ok"}
    assert ready["Content-Type"].startswith("application/json")  # its own report of the database, not the page
