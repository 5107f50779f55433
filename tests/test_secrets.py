"""The API key never appears in a response body or header, a page, a static file, a log
record, a command's output or an exception's text, across the suite's scenarios."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from sportsproxy import SportsClient, SportsError
from sportsproxy.django.checks import check_sports_settings
from sportsproxy.sandbox.accounts.keys import register_key
from sportsproxy.sandbox.models import Account
from tests.mintroute.conftest import logged_in_browser, post_token
from tests.support import envelope
from tests.upstreams import closed_port_url, fake_upstream, http_response

STATIC = Path(__file__).resolve().parents[1] / "static"
KNOWN_KEY = "sk_test_" + "Known-Secret-For-The-Leak-Scan_" + "x" * 16


def site_app_pages() -> list[str]:
    """The pages of the site's own apps (config/<app>/urls.py, whichever the project has) that take no argument,
    each also with a query that filters by a sport."""
    from django.urls import URLPattern

    from config.urls import site_apps

    paths = [
        f"/{pattern.pattern}"
        for resolver in site_apps
        for pattern in resolver.url_patterns
        if isinstance(pattern, URLPattern) and not pattern.pattern.converters and str(pattern.pattern)
    ]
    return [*paths, *(f"{path}?sports=curling" for path in paths)]


def all_text(response: Any) -> str:
    return f"{response.status_code} {dict(response.headers)} {response.cookies.output()} {response.content!r}"


def test_the_api_key_never_leaks(settings: Any, account: Account, caplog: pytest.LogCaptureFixture) -> None:
    key_row = register_key(account, KNOWN_KEY)
    settings.SPORTS_API_KEY = KNOWN_KEY
    settings.SPORTS_TOKEN_RATE = "1000/m"
    seen: list[str] = []
    caplog.set_level(logging.DEBUG)

    browser = logged_in_browser()
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    for path in ("/", "/accounts/login/", "/healthz", *site_app_pages()):
        seen.append(all_text(browser.get(path)))
    for body in ("", '{"reason": "refresh"}', '{"reason": "unauthorized"}', "[]", "not json"):
        seen.append(all_text(post_token(browser, body)))
    seen.append(all_text(post_token(Client(enforce_csrf_checks=True))))
    for path in ("/admin/sandbox/apikey/", f"/admin/sandbox/apikey/{key_row.pk}/change/", "/admin/sandbox/account/"):
        seen.append(all_text(admin.get(path)))

    rpc = Client()
    for method, params, headers in (
        ("matches.list", {}, {}),
        ("tokens.create", {"ttl": 5}, {}),
        ("nope", {}, {}),
        ("auth", {}, {"HTTP_ORIGIN": "https://evil.example"}),
    ):
        response = rpc.post(
            "/sdk/v1/rpc",
            json.dumps(envelope(method, params)),
            "application/json",
            HTTP_AUTHORIZATION=f"Bearer {KNOWN_KEY}",
            **headers,
        )
        seen.append(all_text(response))

    errors: list[SportsError] = []
    for base_url in (closed_port_url(),):
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = base_url
        seen.append(all_text(post_token(browser, '{"reason": "unauthorized"}')))
        try:
            SportsClient(KNOWN_KEY, base_url=base_url, max_retries=0).call("auth")
        except SportsError as error:
            errors.append(error)
    with fake_upstream(lambda body: http_response(b"<h1>oops</h1>", content_type="text/html")) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        seen.append(all_text(post_token(browser, '{"reason": "unauthorized"}')))
    settings.SPORTS_TRANSPORT = "sandbox"
    key_row.revoke()
    seen.append(all_text(post_token(browser, '{"reason": "unauthorized"}')))

    output = io.StringIO()
    call_command("sandbox_key", "list", stdout=output)
    seen.append(output.getvalue())
    settings.SPORTS_API_KEY = KNOWN_KEY[:-20]  # malformed: the check must not quote it
    seen.extend(f"{message.msg} {message.hint}" for message in check_sports_settings())

    seen.extend(f"{error!s} {error!r} {error.args!r}" for error in errors)
    seen.extend(record.getMessage() + str(record.args) for record in caplog.records)
    seen.append(caplog.text)
    seen.extend(path.read_text(errors="replace") for path in STATIC.rglob("*") if path.is_file())

    assert len(seen) > 30
    secret_part = KNOWN_KEY[len("sk_test_") :]
    leaks = [text[:200] for text in seen if KNOWN_KEY in text or secret_part in text or KNOWN_KEY[:-20] in text]
    assert leaks == []
