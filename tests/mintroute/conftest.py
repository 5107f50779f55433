"""Fixtures for the mint route: a logged-in browser with CSRF enforced, one clock for everyone, and
`entry`, each of the route's two entries in turn (tests/mintroute/entries.py)."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import django_ratelimit.core
import pytest
from django.contrib.auth.models import User
from django.test import Client

from mintroute import reuse
from sportsproxy.sandbox.accounts import quota
from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import ApiKey
from tests.mintroute.entries import ENTRIES, Entry, serve_entry

Mint = Callable[..., Any]
Test = Callable[..., None]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that uses `sharing` runs in each SPORTS_TOKEN_SHARING mode (see login_mode_only); one
    that uses `entry` runs against each entry of the route (see wsgi_only)."""
    if "sharing" in metafunc.fixturenames:
        only_login = getattr(metafunc.function, "login_mode_only", False)
        metafunc.parametrize("sharing", ["login"] if only_login else ["login", "site"], indirect=True)
    if "entry" in metafunc.fixturenames:
        only_wsgi = getattr(metafunc.function, "wsgi_only", False)
        metafunc.parametrize("entry", ENTRIES[:1] if only_wsgi else ENTRIES, indirect=True)


def login_mode_only(test: Test) -> Test:
    """Marks a test of what only "login" mode does (the per-login cookie): it runs in that mode alone."""
    test.login_mode_only = True  # type: ignore[attr-defined]
    return test


def wsgi_only(test: Test) -> Test:
    """Marks a row that needs what only Django's test client can do (choose REMOTE_ADDR, or change
    MIDDLEWARE after the ASGI app was built): it runs against the WSGI entry alone."""
    test.wsgi_only = True  # type: ignore[attr-defined]
    return test


@pytest.fixture
def entry(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Entry]:
    """Each entry of the route in turn: "wsgi" (Django's test client) and "asgi" (uvicorn, a real socket)."""
    yield from serve_entry(request, monkeypatch)


@pytest.fixture
def sharing(request: pytest.FixtureRequest, settings: Any) -> str:
    """SPORTS_TOKEN_SHARING for this test: each mode in turn where the test module asks for it."""
    mode: str = getattr(request, "param", "login")
    settings.SPORTS_TOKEN_SHARING = mode
    return mode


@pytest.fixture(autouse=True)
def one_clock(clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """The sandbox, the route's reuse rule and django-ratelimit's windows all read `clock`."""
    monkeypatch.setattr(reuse, "now", clock.now)
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: clock.now().timestamp()))
    return clock


@pytest.fixture(autouse=True)
def site_key(settings: Any, api_key: str) -> str:
    """The route as a host site configures it: the sandbox's key, and "login" sharing (the route's own default,
    whatever this project's default is) unless the test asks for a mode (`sharing`)."""
    settings.SPORTS_TOKEN_SHARING = "login"
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "sandbox"
    settings.SPORTS_TOKEN_TTL = 600
    settings.SPORTS_TOKEN_RATE = "10/m"
    return api_key


def logged_in_browser(username: str = "alice", **client_options: Any) -> Client:
    """A browser with a session and the CSRF cookie, as a real page would leave it."""
    user = User.objects.filter(username=username).first() or User.objects.create_user(username, password="pw")
    browser = Client(enforce_csrf_checks=True, **client_options)
    browser.force_login(user)
    browser.get("/accounts/login/")  # sets the csrftoken cookie
    return browser


@pytest.fixture
def browser() -> Client:
    return logged_in_browser()


def post_token(browser: Client, body: str | None = None, *, csrf: bool = True, **headers: Any) -> Any:
    if csrf and "csrftoken" in browser.cookies:
        headers.setdefault("HTTP_X_CSRFTOKEN", browser.cookies["csrftoken"].value)
    return browser.post("/api/sports-token", body or "", content_type="application/json", **headers)


def upstream_calls(api_key: str) -> int:
    """tokens.create calls the sandbox has counted for the key's account this minute."""
    return quota.requests_used(ApiKey.objects.get(secret_hash=hash_secret(api_key)).account.public_id)


TEXT_LINE = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) (?P<logger>\S+) \[(?P<request_id>[^\]]*)\]: (?P<message>.*)$")


@dataclass(frozen=True)
class Line:
    """One line of the text format (config.settings' "text" formatter), read back."""

    level: str
    logger: str
    request_id: str
    message: str


class Console:
    """What the site's console log handler (settings.LOGGING's "console") wrote during a test."""

    def __init__(self, handler: logging.StreamHandler[Any], stream: io.StringIO) -> None:
        self.handler = handler
        self._stream = stream

    def lines(self) -> list[str]:
        return self._stream.getvalue().splitlines()

    def records(self) -> list[Line]:
        """The lines that start a record (a traceback's lines do not)."""
        return [Line(**found.groupdict()) for line in self.lines() if (found := TEXT_LINE.match(line))]

    def of(self, request_id: str, logger: str | None = None) -> list[Line]:
        """The records of `request_id` (of `logger` only, when given)."""
        return [line for line in self.records() if line.request_id == request_id and logger in (None, line.logger)]


@pytest.fixture
def console() -> Iterator[Console]:
    """The lines the site's own log handler writes, as it writes them (its filter and format)."""
    handler = next(each for each in logging.getLogger().handlers if each.name == "console")
    assert isinstance(handler, logging.StreamHandler)
    stream, formatter = io.StringIO(), handler.formatter
    previous = handler.setStream(stream)
    try:
        yield Console(handler, stream)
    finally:
        handler.setStream(previous)
        handler.setFormatter(formatter)
