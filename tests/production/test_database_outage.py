"""The mint route and the login pages when the stores they read go away and come back.

`make serve` (config.serve) in production, its PostgreSQL reached through a TCP proxy the test
cuts and its cache a Redis of the test's own that it stops: while the database is unreachable every
mint is 503 `authentication_unavailable` JSON (with `Retry-After` and `no-store`), never Django's
HTML 500, and the login pages are a 503 page with `Retry-After` that says to try again shortly;
once the store is back, both answer as before. A database that never answers (the proxy a black hole:
it accepts and acknowledges, and nothing comes back) makes the route and the pages answer 503 within
5 s. A database cut after the mint, before SessionMiddleware saves the session
(SESSION_SAVE_EVERY_REQUEST), costs no token, nor does one that stops answering there. And sessions kept
in a Redis of the test's own, cut away or stopped: the same 503, then the route answers from the
store again. The same node shows that the route's path answers JSON whatever would answer it
otherwise: a Host not in ALLOWED_HOSTS, a body declared over the limit (refused before it is sent).
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import httpx2
import pytest

from mintroute.admission import MAX_BODY_BYTES
from tests import stores
from tests.mintroute.conftest import logged_in_browser, post_token
from tests.production.cluster import PASSWORD, USERNAME, Cluster, logged_in, mint, require_engines
from tests.production.tcp_proxy import TcpProxy, postgres_proxy
from tests.production.test_make_serve import PRODUCTION
from tests.redis_server import RedisServer, require_redis_server
from tests.upstreams import fake_upstream, http_response

# Not `serial`: a cut answers within a second here, and tests/production/'s modules run one at a time (one
# xdist group), so the bound holds beside the rest of the gate.
ANSWERED_WITHIN_SECONDS = 10


class ProxiedNode(NamedTuple):
    node: Cluster
    database: TcpProxy  # cut it: PostgreSQL is unreachable
    cache: RedisServer  # the node's REDIS_URL (cache and channel layer): stop it, start it


@pytest.fixture(scope="module")
def proxied_node() -> Iterator[ProxiedNode]:
    """One production node of `make serve` whose DATABASE_URL goes through a proxy and whose REDIS_URL
    is a redis-server of the module's own."""
    require_engines()
    require_redis_server()
    cache = RedisServer()
    cache.start()
    proxy = postgres_proxy()
    proxy.start()
    node = Cluster(**PRODUCTION, REDIS_URL=cache.url)
    node.environment["DATABASE_URL"] = stores.postgres_url(node.database, port=proxy.port)
    try:
        node.start(events_in=(False,))
        yield ProxiedNode(node, proxy, cache)
    finally:
        proxy.restore()  # node.stop() drops its database through the proxy's target directly
        node.stop()
        proxy.stop()
        cache.stop()


def assert_authentication_unavailable(answer: Any, headers: Any) -> None:
    assert answer.status_code == 503, answer.content
    assert headers["Content-Type"] == "application/json"
    assert answer.json()["error"] == "authentication_unavailable"
    assert int(headers["Retry-After"]) > 0
    assert headers["Cache-Control"] == "no-store"


def test_a_database_outage_is_503_json_rows_then_the_route_recovers(proxied_node: ProxiedNode) -> None:
    browser = logged_in(proxied_node.node.urls[0])
    try:
        assert_outage_then_recovery(browser, proxied_node.database)
    finally:
        browser.close()


def assert_outage_then_recovery(browser: httpx2.Client, proxy: TcpProxy) -> None:
    assert mint(browser).status_code == 200

    proxy.cut()
    try:
        for _ in range(5):
            started = time.monotonic()
            answer = mint(browser)
            assert time.monotonic() - started < ANSWERED_WITHIN_SECONDS
            assert_authentication_unavailable(answer, answer.headers)
            assert "Traceback" not in answer.text
    finally:
        proxy.restore()

    recovered = mint(browser)
    assert recovered.status_code == 200, recovered.text
    assert set(recovered.json()) == {"token", "expiresAt"}


def test_a_cache_session_store_that_goes_away_is_503_then_recovers(
    own_redis: RedisServer,
    settings: Any,
    api_key: str,
) -> None:
    proxy = TcpProxy(own_redis.port)  # cut and restored, so that the sessions in Redis survive the outage
    proxy.start()
    try:
        settings.SPORTS_API_KEY = api_key
        settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
        location = f"redis://127.0.0.1:{proxy.port}/0"
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}
        browser = logged_in_browser()  # its session lives in that Redis
        assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200

        proxy.cut()
        for _ in range(3):
            answer = post_token(browser, '{"reason": "unauthorized"}')
            assert_authentication_unavailable(answer, answer)
            assert "sessionid" not in answer.cookies  # the session cookie is kept, not deleted

        proxy.restore()
        assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200  # the same login
    finally:
        proxy.stop()


def test_a_cache_session_store_that_stops_is_503_not_a_logout(
    own_redis: RedisServer,
    settings: Any,
    api_key: str,
) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}}
    browser = logged_in_browser()
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200
    own_redis.stop()
    answer = post_token(browser, '{"reason": "unauthorized"}')
    assert_authentication_unavailable(answer, answer)
    own_redis.start()  # an empty Redis (no persistence): the session is gone, so the caller logs in again
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 401


# --- the login pages ------------------------------------------------------------------------------
def form_token(page: httpx2.Response) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found is not None, page.text
    return found.group(1)


def assert_polite(answer: httpx2.Response, what: str) -> None:
    assert answer.status_code == 503, (what, answer.status_code, answer.text)
    assert int(answer.headers["Retry-After"]) > 0, what
    assert "try again shortly" in answer.text.lower(), (what, answer.text)
    assert "Traceback" not in answer.text
    assert "Server Error" not in answer.text


class LoginPages:
    """A logged-in user and a visitor about to log in, on /accounts/login/, /admin/login/ and /accounts/logout/."""

    def __init__(self, url: str) -> None:
        self.user = logged_in(url)
        self.visitor = httpx2.Client(base_url=url, timeout=ANSWERED_WITHIN_SECONDS)
        self.login_form = form_token(self.visitor.get("/accounts/login/"))
        self.admin_form = form_token(self.visitor.get("/admin/login/"))

    def log_in(self, path: str) -> httpx2.Response:
        form = self.login_form if path == "/accounts/login/" else self.admin_form
        credentials = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": form}
        return self.visitor.post(path, data=credentials)

    def log_out(self) -> httpx2.Response:
        return self.user.post("/accounts/logout/", data={"csrfmiddlewaretoken": self.user.cookies["csrftoken"]})

    def each(self) -> dict[str, httpx2.Response]:
        """Every way a login page meets the database or the cache (the user's pages read its session)."""
        return {
            "GET /accounts/login/ (logged in)": self.user.get("/accounts/login/"),
            "GET /admin/login/ (logged in)": self.user.get("/admin/login/"),
            "POST /accounts/login/": self.log_in("/accounts/login/"),
            "POST /admin/login/": self.log_in("/admin/login/"),
            "POST /accounts/logout/": self.log_out(),
        }

    def close(self) -> None:
        self.user.close()
        self.visitor.close()


def test_the_login_pages_answer_503_while_the_database_is_cut_then_recover(proxied_node: ProxiedNode) -> None:
    pages = LoginPages(proxied_node.node.urls[0])
    try:
        proxied_node.database.cut()
        try:
            for what, answer in pages.each().items():
                assert_polite(answer, what)
        finally:
            proxied_node.database.restore()

        assert pages.user.get("/accounts/login/").status_code == 200
        assert pages.log_in("/accounts/login/").status_code == 302  # logged in
        assert pages.log_out().status_code in (200, 302)
    finally:
        pages.close()


def test_the_login_pages_answer_503_while_the_cache_is_stopped_then_recover(proxied_node: ProxiedNode) -> None:
    # The login forms count failures in the cache (the login throttle); the other pages do not need it.
    pages = LoginPages(proxied_node.node.urls[0])
    try:
        proxied_node.cache.stop()
        try:
            for what, answer in pages.each().items():
                assert answer.status_code < 500 or answer.status_code == 503, (what, answer.text)
                if what.startswith("POST /accounts/login/") or what.startswith("POST /admin/login/"):
                    assert_polite(answer, what)
        finally:
            proxied_node.cache.start()

        assert pages.log_in("/accounts/login/").status_code == 302
    finally:
        pages.close()


# --- a database that never answers: a partition behind a proxy, not a refusal -----------------------
NEVER_ANSWERS_WITHIN_SECONDS = 5  # the rule's bound for each answer while the database never answers


def timed(request: Callable[[], httpx2.Response]) -> tuple[httpx2.Response, float]:
    started = time.monotonic()
    answer = request()
    return answer, time.monotonic() - started


def test_the_route_and_the_pages_answer_503_within_5_s_while_the_database_never_answers(
    proxied_node: ProxiedNode,
) -> None:
    # The node's default: a new connection per request, which the black hole accepts and never answers.
    user = logged_in(proxied_node.node.urls[0])
    requests: dict[str, Callable[[], httpx2.Response]] = {
        "POST /api/sports-token": lambda: mint(user),
        "GET /accounts/login/": lambda: user.get("/accounts/login/"),
        "GET /": lambda: user.get("/"),
        "GET /admin/": lambda: user.get("/admin/"),
    }
    try:
        proxied_node.database.black_hole()
        try:
            with ThreadPoolExecutor(len(requests)) as side_by_side:
                running = {what: side_by_side.submit(timed, request) for what, request in requests.items()}
                answers = {what: each.result() for what, each in running.items()}
        finally:
            proxied_node.database.restore()
        for what, (answer, took) in answers.items():
            assert took < NEVER_ANSWERS_WITHIN_SECONDS, (what, took)
            if what == "POST /api/sports-token":
                assert_authentication_unavailable(answer, answer.headers)
            else:
                assert_polite(answer, what)
                assert answer.headers["Content-Type"].startswith("text/html")

        assert mint(user).status_code == 200
        assert user.get("/accounts/login/").status_code == 200
    finally:
        user.close()


# --- a database cut after the mint, before the session is saved -----------------------------------
class CuttingService:
    """The service's tokens.create on a socket; while `cut_at_the_mint` is set it cuts the site's
    database before it answers, so the site's next database write is SessionMiddleware's save; while
    `black_hole_at_the_mint` is set it turns the database's proxy into a black hole instead, so that
    save waits on a connection made before the partition."""

    def __init__(self, database: TcpProxy) -> None:
        self.database = database
        self.cut_at_the_mint = threading.Event()
        self.black_hole_at_the_mint = threading.Event()

    def reply(self, body: bytes) -> bytes:
        if self.cut_at_the_mint.is_set():
            self.database.cut()
        if self.black_hole_at_the_mint.is_set():
            self.database.black_hole()
        request = json.loads(body)
        ttl = request["params"]["ttl"]
        expires_at = (datetime.now(UTC) + timedelta(seconds=ttl)).isoformat(timespec="seconds")
        result = {"token": f"standin.{secrets.token_hex(4)}.signature", "expiresAt": expires_at}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode())


@pytest.fixture(scope="module")
def node_saving_every_request() -> Iterator[tuple[Cluster, CuttingService]]:
    """A production node of `make serve` with SESSION_SAVE_EVERY_REQUEST, its database behind a proxy
    and its service a CuttingService."""
    require_engines()
    proxy = postgres_proxy()
    proxy.start()
    service = CuttingService(proxy)
    with fake_upstream(service.reply) as service_url:
        node = Cluster(
            **PRODUCTION,
            DJANGO_SETTINGS_MODULE="tests.production.save_every_request_settings",
            SPORTS_SANDBOX="0",
            SPORTS_BASE_URL=service_url,
            SPORTS_API_KEY="sk_test_" + secrets.token_urlsafe(32),
        )
        node.environment["DATABASE_URL"] = stores.postgres_url(node.database, port=proxy.port)
        try:
            node.start(events_in=(False,))
            yield node, service
        finally:
            proxy.restore()
            node.stop()
            proxy.stop()


def test_a_database_cut_after_the_mint_costs_no_token(
    node_saving_every_request: tuple[Cluster, CuttingService],
) -> None:
    # Before: SessionMiddleware's failed save was Django's HTML 400 and the minted token was lost.
    node, service = node_saving_every_request
    browser = logged_in(node.urls[0])
    try:
        assert mint(browser).status_code == 200
        service.cut_at_the_mint.set()
        try:
            answer = mint(browser)
        finally:
            service.cut_at_the_mint.clear()
            service.database.restore()
        assert answer.status_code == 200, answer.text
        assert set(answer.json()) == {"token", "expiresAt"}
        assert answer.headers["Cache-Control"] == "no-store"

        recovered = mint(browser)  # the same login: its session was never lost
        assert recovered.status_code == 200, recovered.text
    finally:
        browser.close()


def test_a_database_that_stops_answering_after_the_mint_costs_no_token_and_no_wait(
    node_saving_every_request: tuple[Cluster, CuttingService],
) -> None:
    # The session's save waits on the connection the request opened before the partition, which
    # PostgreSQL's statement_timeout cannot end: the site's own bound does, and the mint is given.
    node, service = node_saving_every_request
    browser = logged_in(node.urls[0])
    try:
        opened = service.database.accepted
        service.black_hole_at_the_mint.set()
        try:
            answer, took = timed(lambda: mint(browser))
        finally:
            service.black_hole_at_the_mint.clear()
            service.database.restore()
        assert took < NEVER_ANSWERS_WITHIN_SECONDS, took
        # One connection: the save waited on the request's own, and no new one was dialled into the partition.
        assert service.database.accepted == opened + 1
        assert answer.status_code == 200, answer.text
        assert set(answer.json()) == {"token", "expiresAt"}

        assert browser.get("/accounts/login/").status_code == 200  # the same login, on a new connection
    finally:
        browser.close()


# --- the route's path answers JSON, whatever would answer it ----------------------------------------
DECLARED_BYTES = 200 * 1024 * 1024  # announced, never sent


def assert_row(answer: httpx2.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.json()["error"] == code


def test_a_host_not_allowed_is_the_routes_400(proxied_node: ProxiedNode) -> None:
    url = proxied_node.node.urls[0]
    browser = logged_in(url)
    try:
        headers = {"X-CSRFToken": browser.cookies["csrftoken"], "Host": "evil.example"}
        assert_row(browser.post("/api/sports-token", json={}, headers=headers), 400, "bad_request")
        anonymous = httpx2.post(f"{url}/api/sports-token", headers={"Host": "evil.example"}, timeout=10)
        assert_row(anonymous, 400, "bad_request")
    finally:
        browser.close()


def test_a_body_declared_over_the_limit_is_400_before_it_is_sent(proxied_node: ProxiedNode) -> None:
    host, port = proxied_node.node.urls[0].removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=ANSWERED_WITHIN_SECONDS)
    try:
        connection.putrequest("POST", "/api/sports-token")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(DECLARED_BYTES))
        connection.endheaders(b'{"reason": ')  # the rest never comes
        answer = connection.getresponse()
        row = json.loads(answer.read())
    finally:
        connection.close()
    assert answer.status == 400
    assert answer.headers["Cache-Control"] == "no-store"
    assert row["error"] == "bad_request"
    assert f"larger than {MAX_BODY_BYTES} bytes" in row["message"]
