"""The installed mint route in the host sites of the third wave: a backend of mobile apps that signs
them in with DRF's `rest_framework.authtoken` or with simplejwt, and a site served by uvicorn (ASGI).

The apps' calls carry an `Authorization` header and nothing else: no cookie jar, no CSRF token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import PASSWORD, ForeignSite
from tests.standalone.rows import answers_every_row, assert_nothing_leaked

ROUTE = "/api/sports-token"
RATE = 10  # the route's default limit per user and per client IP, a minute

TOKEN_SITE = """
INSTALLED_APPS += ["rest_framework.authtoken"]
SPORTS_TOKEN_AUTHENTICATION = ["rest_framework.authentication.TokenAuthentication"]
"""

JWT_SITE = """
SPORTS_TOKEN_AUTHENTICATION = ["rest_framework_simplejwt.authentication.JWTAuthentication"]
"""
JWT_URLS = """
from rest_framework_simplejwt.views import TokenObtainPairView

urlpatterns += [path("api/auth/token/", TokenObtainPairView.as_view())]
"""


def drf_token(site: ForeignSite, _: str) -> str:
    """The user's DRF token, as the site's `drf_create_token` command hands it out."""
    created = re.search(r"Generated token (\w+) for user", site.manage("drf_create_token", "site-user"))
    assert created is not None
    return created.group(1)


def jwt_access_token(_: ForeignSite, site_url: str) -> str:
    """An access token from the site's simplejwt login endpoint, as the app signs in."""
    login = httpx2.post(f"{site_url}/api/auth/token/", json={"username": "site-user", "password": PASSWORD}, timeout=30)
    assert login.status_code == 200, login.text
    access: str = login.json()["access"]
    return access


MOBILE_BACKENDS: dict[str, tuple[str, str, str, Callable[[ForeignSite, str], str], str]] = {
    # name: (settings, urls, Authorization keyword, how the app gets its credential, the 401 challenge)
    "authtoken": (TOKEN_SITE, "", "Token", drf_token, "Token"),
    "simplejwt": (JWT_SITE, JWT_URLS, "Bearer", jwt_access_token, 'Bearer realm="api"'),
}


def app_call(site_url: str, authorization: str | None) -> httpx2.Response:
    """One call of an app: a fresh connection, no cookies, no CSRF token, an empty JSON body."""
    headers = {} if authorization is None else {"Authorization": authorization}
    return httpx2.post(f"{site_url}{ROUTE}", json={}, headers=headers, timeout=30)


@pytest.mark.parametrize("server_name", ["runserver", "uvicorn"])
@pytest.mark.parametrize("backend", MOBILE_BACKENDS)
def test_a_mobile_backend_mints_for_its_apps_header_alone_and_keeps_the_limits(
    integrations_python: Path, sandbox: Sandbox, tmp_path: Path, backend: str, server_name: str
) -> None:
    settings, urls, keyword, credential_of, challenge = MOBILE_BACKENDS[backend]
    site = ForeignSite(
        tmp_path / "site", integrations_python, sandbox.api_key, sandbox.url, extra_settings=settings, extra_urls=urls
    ).write()
    site.prepare()
    assert "System check identified no issues" in site.manage("check")
    seen: list[httpx2.Response] = []

    with site.serving(server_name) as site_url:
        authorization = f"{keyword} {credential_of(site, site_url)}"
        for wrong in (None, f"{keyword} not-a-credential-of-this-site"):
            refused = app_call(site_url, wrong)
            seen.append(refused)
            assert refused.status_code == 401, refused.text
            assert refused.json()["error"] == "not_authenticated"
            assert refused.headers["www-authenticate"] == challenge

        first = app_call(site_url, authorization)
        seen.append(first)
        assert first.status_code == 200, first.text
        assert set(first.json()) == {"token", "expiresAt"}
        listing = httpx2.post(
            f"{sandbox.url}/sdk/v1/rpc",
            json={"jsonrpc": "2.0", "id": "1", "method": "matches.list", "params": {"limit": 1}},
            headers={"Authorization": f"Bearer {first.json()['token']}"},
            timeout=30,
        ).json()
        assert len(listing["result"]["data"]) == 1, listing

        with httpx2.Client(base_url=site_url, headers={"Authorization": authorization}, timeout=30) as app_with_jar:
            kept = [app_with_jar.post(ROUTE, json={}) for _ in range(2)]  # 2 and 3 of the limit
        seen.extend(kept)
        assert [response.status_code for response in kept] == [200, 200]
        assert kept[0].json() == kept[1].json()  # a cookie jar gets the remembered token again

        for _ in range(RATE - 3):
            again = app_call(site_url, authorization)
            seen.append(again)
            assert again.status_code == 200, again.text
        limited = app_call(site_url, authorization)
        seen.append(limited)
        assert limited.status_code == 429, limited.text
        assert limited.json()["error"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1
    assert_nothing_leaked(seen, site, sandbox.api_key)


def test_a_site_served_by_uvicorn_answers_every_row(
    integrations_python: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    site = ForeignSite(tmp_path / "site", integrations_python, sandbox.api_key, sandbox.url).write()
    site.prepare()
    with site.serving("uvicorn") as site_url:
        seen = answers_every_row(site_url, sandbox)
    assert_nothing_leaked(seen, site, sandbox.api_key)
