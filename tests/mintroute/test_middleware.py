"""mintroute.middleware: every answer on the route's path is one of its JSON rows (route_answers_json,
against both entries); under ASGI, run_chain_in_one_thread runs the site's middleware in the
request's thread; one request is followed by its id (follow_requests) on every line it causes and
to the service, through each entry and an async chain."""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient, Client

from mintroute.admission import MAX_BODY_BYTES
from mintroute.sharing import REPLACEMENT_WINDOW
from sportsproxy.sandbox.clock import ManualClock
from tests.mintroute.conftest import Console, wsgi_only
from tests.mintroute.entries import ENTRIES, Entry, assert_refusal, serve_entry
from tests.production.tcp_proxy import TcpProxy
from tests.redis_server import RedisServer
from tests.upstreams import fake_upstream, http_response


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every function Django's ASGI path sends from the event loop to a thread, by name."""
    sent: list[str] = []
    cross = SyncToAsync.__call__

    async def counted(self: SyncToAsync[Any, Any], *args: Any, **kwargs: Any) -> Any:
        sent.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await cross(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    return sent


@pytest.mark.django_db
async def test_under_asgi_no_middleware_step_crosses_to_a_thread_of_its_own(crossings: list[str]) -> None:
    response = await AsyncClient().get("/healthz")

    assert response.status_code == 200
    steps = [name for name in crossings if "Middleware." in name]
    assert steps == [name for name in steps if name.endswith(".process_view")]  # Django adapts these apart
    assert len(crossings) <= 6, crossings  # the chain, the view's URL and view steps, the signals, close


@pytest.mark.django_db
def test_under_wsgi_it_passes_every_request_on() -> None:
    response = Client().get("/healthz")

    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"  # the middleware above it ran


# --- route_answers_json: every answer on the route's path is one of its JSON rows ----------------
ANSWERED = "2026-03-14T15:19:26+00:00"  # the test clock's start plus the route's ttl


def test_a_host_not_in_allowed_hosts_is_the_routes_400(entry: Entry) -> None:
    for caller in (entry.browser(), entry.anonymous()):
        answer = caller.mint(headers={"Host": "evil.example"})
        body = assert_refusal(answer, 400, "bad_request")
        assert answer.headers["Content-Type"] == "application/json"
        assert "evil.example" not in body["message"]  # a caller's header is never echoed back


@wsgi_only  # SecurityMiddleware reads SECURE_SSL_REDIRECT once, when the ASGI app is built
def test_a_host_not_allowed_is_400_json_behind_an_https_redirect_too(entry: Entry, settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True  # SecurityMiddleware reads the host before anything else does
    assert_refusal(entry.browser().mint(headers={"Host": "evil.example"}), 400, "bad_request")


def test_a_body_over_the_limit_is_400_whoever_sends_it(entry: Entry) -> None:
    oversize = json.dumps({"reason": "refresh", "pad": "x" * MAX_BODY_BYTES})
    for caller in (entry.browser(), entry.anonymous()):
        body = assert_refusal(caller.mint(oversize), 400, "bad_request")
        assert f"larger than {MAX_BODY_BYTES} bytes" in body["message"]
        form = assert_refusal(
            caller.mint("a=1&" * 1000, content_type="application/x-www-form-urlencoded"), 400, "bad_request"
        )
        assert "larger than" in form["message"]


@pytest.fixture
def sessions_behind_a_proxy(own_redis: RedisServer, settings: Any) -> Iterator[TcpProxy]:
    """Sessions in a Redis of the test's own, reached through a proxy the test cuts; saved at every
    request (SESSION_SAVE_EVERY_REQUEST), so a cut after the mint fails SessionMiddleware's save."""
    proxy = TcpProxy(own_redis.port)
    proxy.start()
    location = f"redis://127.0.0.1:{proxy.port}/0"
    bounds = {"socket_connect_timeout": 2, "socket_timeout": 2}
    sessions = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location, "OPTIONS": bounds}
    settings.CACHES = {**settings.CACHES, "sessions": sessions}
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    settings.SESSION_CACHE_ALIAS = "sessions"
    settings.SESSION_SAVE_EVERY_REQUEST = True
    yield proxy
    proxy.stop()


def cutting_upstream(proxy: TcpProxy, cut: threading.Event) -> Callable[[bytes], bytes]:
    """The service: it mints, and while `cut` is set it cuts the session store before it answers."""

    def reply(body: bytes) -> bytes:
        if cut.is_set():
            proxy.cut()
        result = {"token": f"a.b.{secrets.token_hex(4)}", "expiresAt": ANSWERED}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": result}).encode())

    return reply


@pytest.fixture
def entry_saving_sessions_behind_a_proxy(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, sessions_behind_a_proxy: TcpProxy
) -> Iterator[Entry]:
    yield from serve_entry(request, monkeypatch, chain_built_now=True)


@pytest.mark.parametrize("entry_saving_sessions_behind_a_proxy", ENTRIES, indirect=True)
def test_a_session_store_that_fails_after_the_mint_costs_no_token(
    entry_saving_sessions_behind_a_proxy: Entry,
    sharing: str,
    settings: Any,
    sessions_behind_a_proxy: TcpProxy,
    one_clock: ManualClock,
) -> None:
    # The token itself is the answer (a mint is never thrown away): the view ran, minted and answered;
    # SessionMiddleware's save, after it, failed. The session cookie is left as it was.
    entry = entry_saving_sessions_behind_a_proxy
    browser = entry.browser(raise_request_exception=False)  # a real server never raises into its client
    cut = threading.Event()
    with fake_upstream(cutting_upstream(sessions_behind_a_proxy, cut)) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        assert browser.mint('{"reason": "unauthorized"}').status_code == 200
        one_clock.advance(REPLACEMENT_WINDOW.total_seconds() + 1)  # site mode: a replacement is minted again
        cut.set()
        answer = browser.mint('{"reason": "unauthorized"}')
        assert answer.status_code == 200, answer.text
        assert answer.json()["expiresAt"] == ANSWERED
        assert answer.headers["Cache-Control"] == "no-store"
        assert not answer.sets_cookie("sessionid")

        cut.clear()
        sessions_behind_a_proxy.restore()
        one_clock.advance(REPLACEMENT_WINDOW.total_seconds() + 1)
        again = browser.mint('{"reason": "unauthorized"}')  # the same login: the store kept the session
        assert again.status_code == 200, again.text
        assert again.json()["token"] != answer.json()["token"]


def test_a_refusal_django_makes_before_the_view_is_the_routes_row(entry: Entry, settings: Any) -> None:
    settings.DISALLOWED_USER_AGENTS = [re.compile("^curl/")]  # CommonMiddleware answers 403 itself
    answer = entry.anonymous().mint(headers={"User-Agent": "curl/8.5.0"})
    assert_refusal(answer, 403, "forbidden")


@wsgi_only  # SecurityMiddleware reads SECURE_SSL_REDIRECT once, when the ASGI app is built
def test_a_redirect_django_makes_before_the_view_is_the_routes_400(entry: Entry, settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True  # SecurityMiddleware would redirect a POST over plain HTTP
    assert_refusal(entry.browser().mint(), 400, "bad_request")


@pytest.mark.django_db
def test_other_paths_keep_djangos_answers(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    answer = Client().get("/healthz", headers={"Host": "evil.example"})
    assert answer.status_code == 400
    assert answer["Content-Type"].startswith("text/html")


@pytest.fixture
def async_chain_entry(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> Iterator[Entry]:
    """The ASGI entry of a site whose chain stays on the event loop (no run_chain_in_one_thread, no
    WhiteNoise, which runs only synchronously): Django runs route_answers_json's async variant."""
    sync_only = ("run_chain_in_one_thread", "WhiteNoiseMiddleware")
    settings.MIDDLEWARE = [name for name in settings.MIDDLEWARE if not name.endswith(sync_only)]
    yield from serve_entry(request, monkeypatch, chain_built_now=True)


@pytest.mark.parametrize("async_chain_entry", ENTRIES[1:], indirect=True)
def test_over_an_async_chain_every_answer_is_json_too(async_chain_entry: Entry) -> None:
    browser = async_chain_entry.browser()
    assert browser.mint().status_code == 200
    assert_refusal(browser.mint(headers={"Host": "evil.example"}), 400, "bad_request")
    assert_refusal(async_chain_entry.anonymous().mint("x" * (MAX_BODY_BYTES + 1)), 400, "bad_request")
    assert_refusal(async_chain_entry.anonymous().mint(), 401, "not_authenticated")


# --- follow_requests: one request's id on its answer, its log lines and the service's call ---------
def service_reply(body: bytes) -> bytes:
    """The service: a token, or an internal error for a call with ttl 61 (a failing mint)."""
    call = json.loads(body)
    if call["params"]["ttl"] == 61:
        error = {"code": "internal_error", "message": "The service failed."}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": call["id"], "error": error}).encode())
    result = {"token": f"a.b.{secrets.token_hex(4)}", "expiresAt": ANSWERED}
    return http_response(json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result}).encode())


@pytest.fixture
def service(settings: Any, caplog: pytest.LogCaptureFixture) -> Iterator[list[dict[str, str]]]:
    """The service on a real socket, behind a site with a proxy in front (the test's peer, 127.0.0.1);
    the SDK's debug lines shown. Yields the headers of each call the service received."""
    heads: list[dict[str, str]] = []
    caplog.set_level("DEBUG", logger="sportsproxy.client")
    with fake_upstream(service_reply, heads=heads) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        settings.SPORTS_TRUSTED_PROXY_COUNT = 1
        yield heads


def test_a_request_is_followed_on_djangos_the_routes_and_the_sdks_lines_and_to_the_service(
    entry: Entry, service: list[dict[str, str]], console: Console, settings: Any
) -> None:
    settings.SPORTS_TOKEN_TTL = 61  # the service fails this mint
    answer = entry.browser().mint('{"reason": "unauthorized"}', headers={"X-Request-ID": "followed-1"})

    assert_refusal(answer, 502, "upstream_error")
    assert answer.headers["X-Request-ID"] == "followed-1"
    assert [head.get("x-request-id") for head in service] == ["followed-1"]
    lines = {(line.logger, line.message.split(":")[0]) for line in console.of("followed-1")}
    assert lines >= {
        ("sportsproxy.client", "POST http"),  # the SDK's call
        ("mintroute.minting", "Mint failed upstream"),  # the route's
        ("django.request", "Bad Gateway"),  # Django's, written once the middleware has answered
    }, console.lines()
    [access] = console.of("followed-1", "mintroute.access")
    assert access.message.startswith("POST /api/sports-token 502 outcome=upstream_error ")


@pytest.mark.parametrize("async_chain_entry", ENTRIES[1:], indirect=True)
def test_over_an_async_chain_the_request_is_followed_too(
    async_chain_entry: Entry, service: list[dict[str, str]], console: Console
) -> None:
    answer = async_chain_entry.browser().mint('{"reason": "unauthorized"}', headers={"X-Request-ID": "followed-2"})

    assert answer.status_code == 200, answer.text
    assert answer.headers["X-Request-ID"] == "followed-2"
    assert [head.get("x-request-id") for head in service] == ["followed-2"]
    [access] = console.of("followed-2", "mintroute.access")
    assert access.message.startswith("POST /api/sports-token 200 outcome=minted ")
    assert console.of("followed-2", "sportsproxy.client") != []
