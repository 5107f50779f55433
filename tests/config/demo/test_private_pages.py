"""The demo's HTML pages: what they render for a logged-in user is never stored (`private, no-store`), and
while a store they read is down they answer 503 with Retry-After and the short page, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.cache import get_max_age

from tests.config.test_unavailable import assert_polite, database_down, logged_in

PAGES = ["/", "/demo/server-matches"]


def cache_control(response: Any) -> set[str]:
    return {part.strip() for part in response["Cache-Control"].split(",")}


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_a_users_page_is_private_and_never_stored(settings: Any, api_key: str, path: str) -> None:
    settings.SPORTS_API_KEY = api_key
    browser = Client()
    browser.force_login(User.objects.create_user("alice", password="right-pass-123"))
    response = browser.get(path)
    assert response.status_code == 200
    assert {"private", "no-store"} <= cache_control(response)
    assert "public" not in cache_control(response)
    assert get_max_age(response) in (None, 0)


@pytest.mark.django_db
def test_a_refused_listing_is_not_stored_either(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TOKEN_RATE = "1/m"
    browser = Client()
    browser.force_login(User.objects.create_user("alice", password="right-pass-123"))
    browser.get("/demo/server-matches")
    refused = browser.get("/demo/server-matches")
    assert refused.status_code == 429
    assert {"private", "no-store"} <= cache_control(refused)


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_a_users_page_is_503_while_the_database_is_down(settings: Any, path: str) -> None:
    browser = logged_in()
    with database_down(settings):
        assert_polite(browser.get(path))


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_a_visitor_is_sent_to_log_in_as_before(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
