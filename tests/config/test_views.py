"""Site-level views: the health probe, and the product's first page with the pages around it (login,
logout, 503): their caching, their name, what they show."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.urls import get_resolver, reverse
from django.utils.html import escape

from config import project
from config.context_processors import identity, site
from tests.upstreams import closed_port_url


def test_healthz_answers_ok_without_touching_the_database(django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_refuses_post() -> None:
    assert Client().post("/healthz").status_code == 405


def test_the_browser_client_is_served_from_the_mint_routes_static_files() -> None:
    response = Client().get("/static/sports/sports-client.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert b"export class SportsClient" in b"".join(response.streaming_content)  # type: ignore[attr-defined]


# --- The product's first page, and the pages around it -------------------------------------------------


def cache_directives(response: Any) -> set[str]:
    return {directive.strip() for directive in response["Cache-Control"].split(",")}


@pytest.mark.django_db
def test_the_first_page_of_a_logged_in_user_is_never_stored() -> None:
    browser = Client()
    browser.force_login(User.objects.create_user("alice"))
    response = browser.get(reverse("start"))
    assert response.status_code == 200
    assert cache_directives(response) == {"private", "no-store"}
    assert b'id="client-config"' in response.content  # the page of a user: the browser client's settings


@pytest.mark.django_db
def test_the_first_page_of_a_visitor_is_revalidated_and_kept_private() -> None:
    response = Client().get(reverse("start"))
    assert response.status_code == 200
    assert cache_directives(response) == {"private", "no-cache"}
    assert b'id="log-in"' in response.content
    assert b'id="client-config"' not in response.content


@pytest.mark.django_db
def test_the_first_page_shows_no_token_facts() -> None:
    browser = Client()
    browser.force_login(User.objects.create_user("alice"))
    page = browser.get(reverse("start")).content.decode()
    for fact in ("token-fingerprint", "expires-at", "mint-log", "countdown"):
        assert fact not in page
    assert 'id="connection-state" data-state="idle"' in page


def test_the_pages_name_comes_from_code_alone(django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(0):
        context = site(RequestFactory().get("/"))
    assert context["project_name"] == project.NAME
    assert identity() == {"project_name": project.NAME}


@pytest.mark.django_db
def test_the_login_page_is_a_styled_form_in_the_products_name() -> None:
    page = Client().get("/accounts/login/").content.decode()
    assert f"<title>Log in · {escape(project.NAME)}</title>" in page
    assert '<form class="form" method="post"' in page
    assert '<label for="id_username">' in page
    assert '<label for="id_password">' in page
    assert re.search(r'<link rel="stylesheet" href="/static/site(\.[0-9a-f]+)?\.css">', page)


@pytest.mark.django_db
def test_the_logged_out_page_wears_the_products_name() -> None:
    browser = Client()
    browser.force_login(User.objects.create_user("alice"))
    page = browser.post("/accounts/logout/").content.decode()
    assert f"<title>Logged out · {escape(project.NAME)}</title>" in page
    assert 'id="log-in-again"' in page


def test_the_503_page_wears_the_products_name_given_identity() -> None:
    page = render_to_string("503.html", {"retry_after": 5, **identity()})
    assert f"<title>Unavailable for a moment · {escape(project.NAME)}</title>" in page
    assert f'<strong id="project-name">{escape(project.NAME)}</strong>' in page
    assert "try again shortly" in page


@pytest.mark.django_db
def test_the_503_page_of_an_unreachable_store_wears_the_products_name(settings: Any) -> None:
    unreachable = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": closed_redis_url()}
    settings.CACHES = {**settings.CACHES, "sessions": unreachable}
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    settings.SESSION_CACHE_ALIAS = "sessions"
    User.objects.create_user("alice", password="right-pass-123")
    form = {"username": "alice", "password": "right-pass-123"}
    response = Client(raise_request_exception=False).post("/accounts/login/", form)  # the login saves a session
    assert response.status_code == 503
    assert f"<title>Unavailable for a moment · {escape(project.NAME)}</title>" in response.content.decode()


def closed_redis_url() -> str:
    return closed_port_url().replace("http://", "redis://")


# --- The admin, and the error pages, in the product's name ------------------------------------------------------


@pytest.mark.django_db
def test_the_admins_login_wears_the_products_name() -> None:
    page = Client().get("/admin/login/").content.decode()
    assert f"<title>Log in | {escape(project.NAME)}</title>" in page
    assert f'<a href="/admin/">{escape(project.NAME)}</a>' in page  # the header
    assert "Django site admin" not in page
    assert "Django administration" not in page


@pytest.mark.django_db
def test_the_admins_index_wears_the_products_name() -> None:
    browser = Client()
    browser.force_login(User.objects.create_user("alice", is_staff=True, is_superuser=True))
    page = browser.get("/admin/").content.decode()
    assert f"<title>Administration | {escape(project.NAME)}</title>" in page
    assert "Django" not in page.split("<body", 1)[0]


@pytest.mark.django_db
def test_a_missing_page_is_the_sites_404_in_the_products_name(settings: Any, django_assert_num_queries: Any) -> None:
    settings.DEBUG = False
    browser = Client()
    browser.force_login(User.objects.create_user("alice"))
    with django_assert_num_queries(0):  # no session, no user: it renders while the database is down too
        response = browser.get("/nope")
    assert response.status_code == 404
    page = response.content.decode()
    assert f"<title>Page not found · {escape(project.NAME)}</title>" in page
    assert f'<strong id="project-name">{escape(project.NAME)}</strong>' in page
    assert re.search(r'<link rel="stylesheet" href="/static/site(\.[0-9a-f]+)?\.css">', page)


def test_the_500_page_is_the_sites_in_the_products_name(django_assert_num_queries: Any) -> None:
    handler = get_resolver().resolve_error_handler(500)  # as Django finds it (handler500 in config/urls.py)
    with django_assert_num_queries(0):
        response = handler(RequestFactory().get("/"))
    assert response.status_code == 500
    page = response.content.decode()
    assert f"<title>Something went wrong · {escape(project.NAME)}</title>" in page
    assert f'<strong id="project-name">{escape(project.NAME)}</strong>' in page
    assert "Server Error (500)" not in page
