"""The mint route's two entries behind one interface, so that tests/mintroute/test_views.py writes
each row of the route's table once and runs it against both.

- "wsgi": Django's test client with real sessions and CSRF enforced; Django calls `sports_token`.
- "asgi": uvicorn serving config.asgi on a real socket (same process, so the same test database
  and clock), called over HTTP with httpx2; Django calls `sports_token_async`.

Each entry rigs the other entry's mint to fail the test, so a passing row proves which entry served.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from http.cookies import Morsel, SimpleCookie
from typing import Any, Protocol

import httpx2
import pytest
from django.contrib.auth.models import User
from django.core.asgi import get_asgi_application
from django.test import Client

from mintroute import views
from tests.asgi_server import serve_asgi

TIMEOUT = 10  # seconds: every call over the socket has a bound
ROUTE = "/api/sports-token"


class Answer:
    """A response of the route as a test reads it, whichever entry gave it."""

    def __init__(self, status: int, headers: Mapping[str, str], text: str, set_cookies: list[str]) -> None:
        self.status_code = status
        self.headers = headers  # case-insensitive in both clients
        self.text = text
        self._cookies = SimpleCookie()
        for header in set_cookies:
            self._cookies.load(header)

    def json(self) -> Any:
        import json

        return json.loads(self.text)

    def cookie(self, name: str) -> Morsel[str]:
        return self._cookies[name]

    def sets_cookie(self, name: str) -> bool:
        return name in self._cookies


class Caller(Protocol):
    """One browser (or app) calling the route: its cookies persist between calls."""

    def mint(
        self,
        body: str | None = None,
        *,
        csrf: bool = True,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> Answer: ...

    def request(self, method: str) -> Answer: ...

    def get_cookie(self, name: str) -> str: ...

    def set_cookie(self, name: str, value: str) -> None: ...

    def load_csrf_cookie(self) -> None: ...


class WsgiCaller:
    def __init__(self, **client_options: Any) -> None:
        self.client = Client(enforce_csrf_checks=True, **client_options)

    def mint(
        self,
        body: str | None = None,
        *,
        csrf: bool = True,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> Answer:
        sent = dict(headers or {})
        if csrf and "csrftoken" in self.client.cookies:
            sent.setdefault("X-CSRFToken", self.client.cookies["csrftoken"].value)
        return _from_django(self.client.post(ROUTE, body or "", content_type=content_type, headers=sent))

    def request(self, method: str) -> Answer:
        return _from_django(self.client.generic(method, ROUTE))

    def get_cookie(self, name: str) -> str:
        return self.client.cookies[name].value

    def set_cookie(self, name: str, value: str) -> None:
        self.client.cookies[name] = value

    def load_csrf_cookie(self) -> None:
        self.client.get("/accounts/login/")  # the page sets csrftoken


def _from_django(response: Any) -> Answer:
    set_cookies = [morsel.OutputString() for morsel in response.cookies.values()]
    return Answer(response.status_code, response.headers, response.content.decode(), set_cookies)


# Every caller's client shares one TLS context, never used over plain HTTP: each new one loads the CA bundle, 30 ms
# of CPU a caller (a pair of the matrix made 158 of them).
PLAIN_HTTP_TLS = httpx2.create_ssl_context()


class AsgiCaller:
    def __init__(self, address: str) -> None:
        self.client = httpx2.Client(base_url=f"http://{address}", timeout=TIMEOUT, verify=PLAIN_HTTP_TLS)

    def mint(
        self,
        body: str | None = None,
        *,
        csrf: bool = True,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> Answer:
        sent = {"Content-Type": content_type, **(headers or {})}
        if csrf and "csrftoken" in self.client.cookies:
            sent.setdefault("X-CSRFToken", self.client.cookies["csrftoken"])
        return _from_httpx(self.client.post(ROUTE, content=body or "", headers=sent))

    def request(self, method: str) -> Answer:
        return _from_httpx(self.client.request(method.upper(), ROUTE))

    def get_cookie(self, name: str) -> str:
        value: str = self.client.cookies[name]
        return value

    def set_cookie(self, name: str, value: str) -> None:
        self.client.cookies.delete(name)
        self.client.cookies.set(name, value, domain="127.0.0.1", path="/")  # as the server sets its own

    def load_csrf_cookie(self) -> None:
        self.client.get("/accounts/login/")


def _from_httpx(response: httpx2.Response) -> Answer:
    return Answer(response.status_code, response.headers, response.text, response.headers.get_list("set-cookie"))


class Entry:
    """Builds callers of one entry; `name` is "wsgi" or "asgi"."""

    def __init__(self, name: str, address: str | None = None) -> None:
        self.name = name
        self._address = address
        self._opened: list[AsgiCaller] = []

    def anonymous(self, **client_options: Any) -> Caller:
        """A caller with no session (client_options: Django test client options, WSGI only)."""
        if self._address is None:
            return WsgiCaller(**client_options)
        client_options.pop("raise_request_exception", None)  # a real server never raises into its client
        assert not client_options, "a real socket cannot choose REMOTE_ADDR: mark the test wsgi_only"
        caller = AsgiCaller(self._address)
        self._opened.append(caller)
        return caller

    def browser(self, username: str = "alice", **client_options: Any) -> Caller:
        """A browser with a session of `username` and the CSRF cookie, as a real page would leave it."""
        user = User.objects.filter(username=username).first() or User.objects.create_user(username, password="pw")
        caller = self.anonymous(**client_options)
        session = Client()
        session.force_login(user)
        caller.set_cookie("sessionid", session.cookies["sessionid"].value)
        caller.load_csrf_cookie()
        return caller

    def second_tab(self, browser: Caller) -> Caller:
        """Another caller with `browser`'s cookies."""
        tab = self.anonymous()
        for name in ("sessionid", "csrftoken", "sports_token"):
            try:
                tab.set_cookie(name, browser.get_cookie(name))
            except KeyError:
                continue
        return tab

    def close(self) -> None:
        for caller in self._opened:
            caller.client.close()


ENTRIES = (
    pytest.param("wsgi", id="wsgi"),
    pytest.param("asgi", id="asgi", marks=pytest.mark.django_db(transaction=True)),  # uvicorn's thread sees commits
)


def serve_entry(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, *, chain_built_now: bool = False
) -> Iterator[Entry]:
    """The `entry` fixture's body: the entry named by `request.param`, the other entry's mint rigged.

    `chain_built_now`: the ASGI entry serves a Django handler built now, whose middleware read the
    test's settings (SessionMiddleware binds SESSION_ENGINE when the chain is built; the WSGI test
    client builds its chain at its first request anyway).
    """
    name: str = request.param
    with ExitStack() as stack:
        if name == "asgi":
            if chain_built_now:
                request.getfixturevalue("transactional_db")
                address = stack.enter_context(serve_asgi(get_asgi_application()))
            else:
                address = request.getfixturevalue("asgi_server")
            monkeypatch.setattr(views, "mint_upstream", _sync_mint_forbidden)
            entry = Entry(name, address)
        else:
            monkeypatch.setattr(views, "amint_upstream", _async_mint_forbidden)
            entry = Entry(name)
        yield entry
        entry.close()


def _sync_mint_forbidden(ttl: int) -> Any:
    raise AssertionError("the WSGI entry's mint ran under ASGI")


async def _async_mint_forbidden(ttl: int) -> Any:
    raise AssertionError("the ASGI entry's mint ran under WSGI")


def assert_refusal(response: Any, status: int, code: str) -> dict[str, Any]:
    """`response` (an Answer, or a Django test response) is the route's refusal `code` with `status`:
    `{"error", "message"}`, never cached."""
    assert response.status_code == status, getattr(response, "text", None) or response.content
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    assert isinstance(body["message"], str)
    assert body["message"]
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"
    return body
