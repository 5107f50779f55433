"""Site-level views: the health probe."""

from __future__ import annotations

from django.test import Client


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
