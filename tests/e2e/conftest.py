"""A real Chromium (Debian's, driven by Playwright) against the project served on a real socket."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page, sync_playwright

from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.models import Account
from tests.asgi_server import AsgiServer

USERNAME = "player"
PASSWORD = "e2e-pass-123"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    configured = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    return configured if Path(configured).exists() else None


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sync Playwright keeps an event loop in the test's thread; the ORM calls made here are
    # still synchronous (Playwright's recommendation for Django).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="module")  # Playwright's loop must be gone before other modules use the ORM
def browser() -> Iterator[Browser]:
    path = chromium_path()
    if path is None:
        message = "Chromium not found: install Debian's chromium package or set CHROMIUM_PATH."
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it (.ci/run): never skip the browser tests there
        pytest.skip(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def site_server(settings: Any, transactional_db: None) -> Iterator[AsgiServer]:
    """The project on a real socket with the shortest token life, on the real clock; a test may
    stop and start it again (on the same port)."""
    settings.DEBUG = True  # debug on, sandbox mounted: the pages show their debug helpers
    settings.SPORTS_TOKEN_TTL = 60
    settings.SPORTS_TOKEN_RATE = "100/m"
    settings.SPORTS_API_KEY = issue_key(Account.objects.create(name="e2e", tier="growth"), "test")[1]
    settings.SPORTS_SANDBOX_EVENT_INTERVAL = 1
    User.objects.create_user(USERNAME, password=PASSWORD)
    from config.asgi import application

    server = AsgiServer(application)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def site(site_server: AsgiServer) -> str:
    """The address of `site_server`, e.g. http://127.0.0.1:PORT."""
    return site_server.url


def log_in(page: Page, site: str, path: str = "/") -> None:
    """Log in through the login form that `path` sends an anonymous visitor to, and come back to `path`."""
    page.goto(f"{site}{path}")
    if page.locator("#log-in").count():  # a page that shows visitors a link rather than sending them to log in
        page.click("#log-in")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}{path}")


def mint_reasons(page: Page) -> list[str]:
    """The reasons in the page's mint log, oldest first."""
    reasons: list[str] = page.locator("#mint-log li").evaluate_all(
        "items => items.map(item => item.dataset.reason).reverse()"
    )
    return reasons
