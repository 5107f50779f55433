"""docs/deploy.md's nginx configuration, run as written in front of `make serve`: slow clients
are held by nginx, and `/healthz` keeps answering; sent straight to gunicorn, they take it down.

Who is believed: the node trusts X-Forwarded-For only from nginx's address (SPORTS_TRUSTED_PROXIES
127.0.0.1/32, SPORTS_TRUSTED_PROXY_COUNT 1). Any address of 127.0.0.0/8 is this machine, so a client
can connect from another one (127.0.1.x: `fresh_addresses`): straight to gunicorn it is not the proxy, and counts by
its own address whatever it forwards."""

from __future__ import annotations

import base64
import re
import runpy
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from config.drain import DEFAULT_DRAIN_SECONDS
from tests.dual_stack import client_from
from tests.production.cluster import (
    PASSWORD,
    PROJECT_ROOT,
    USERNAME,
    Cluster,
    free_port,
    fresh_addresses,
    require_engines,
)
from tests.production.nginx import (
    access_log,
    documented_configuration,
    main_configuration,
    nginx_binary,
    site_configuration,
)

SLOW_CLIENTS = 230  # the review's count: more than one worker's 100 threads, twice over
PROBE_TIMEOUT_SECONDS = 5  # a bound on each probe, not a measurement


def test_the_documented_configuration_passes_nginx_t(tmp_path: Path) -> None:
    nginx = nginx_binary()
    site = site_configuration(listen=free_port(), http_address="127.0.0.1:8000", socket_address="127.0.0.1:8001")
    main = main_configuration(tmp_path, site)
    completed = subprocess.run(  # noqa: S603 - the nginx binary, a file of ours
        [nginx, "-t", "-c", str(main)], capture_output=True, text=True, timeout=30, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert "test is successful" in completed.stderr


def test_nginx_closes_an_idle_upstream_connection_before_gunicorn_and_before_a_drain_ends() -> None:
    """No reset race: gunicorn never closes a kept-alive connection that nginx may be sending a request on
    (nginx closes it first), and a draining server has none left when it stops accepting (config/drain.py)."""
    upstream = documented_configuration().partition("upstream sports_site {")[2].partition("}")[0]
    (nginx_seconds,) = (int(seconds) for seconds in re.findall(r"^\s*keepalive_timeout (\d+)s;$", upstream, re.M))
    gunicorn = runpy.run_path(str(PROJECT_ROOT / "config" / "gunicorn.conf.py"))
    assert nginx_seconds < gunicorn["keepalive"]
    assert nginx_seconds < DEFAULT_DRAIN_SECONDS
    assert gunicorn["graceful_timeout"] > DEFAULT_DRAIN_SECONDS  # gunicorn's master waits out the drain


class EchoRequestId(BaseHTTPRequestHandler):
    """An upstream that answers the X-Request-ID it was sent."""

    protocol_version = "HTTP/1.1"  # keep-alive, as gunicorn

    def do_GET(self) -> None:
        body = (self.headers.get("X-Request-ID") or "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def documented_nginx_in_front_of(http_address: str, folder: Path) -> Iterator[str]:
    """docs/deploy.md's nginx configuration, run in `folder` in front of `http_address`; its URL."""
    port = free_port()
    main = main_configuration(folder, site_configuration(listen=port, http_address=http_address))
    with running_nginx(main, port) as url:
        yield url


@contextmanager
def running_nginx(main: Path, port: int) -> Iterator[str]:
    """nginx on configuration `main`, once it answers /healthz on `port` (15 s at most); stopped after."""
    process = subprocess.Popen([nginx_binary(), "-c", str(main)])  # noqa: S603 - the nginx binary, a file of ours
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while not answers_health(url):
            assert process.poll() is None, "nginx exited"
            assert time.monotonic() < deadline, "nginx did not answer within 15 s"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_nginx_gives_each_request_its_own_id_sends_it_on_and_logs_it(tmp_path: Path) -> None:
    """The site reads X-Request-ID from its trusted proxy: nginx sets it from $request_id whatever the client
    sent (a client's own never reaches the site), and its access log carries the same id."""
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), EchoRequestId)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with documented_nginx_in_front_of(f"127.0.0.1:{upstream.server_port}", tmp_path) as url:
            sent = [{}, {"X-Request-ID": "chosen-by-the-client"}, {"X-Request-ID": "0" * 32}]
            ids = [httpx2.get(f"{url}/page", headers=headers, timeout=10).text for headers in sent]
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert all(re.fullmatch(r"[0-9a-f]{32}", each) for each in ids), ids
    assert len(set(ids)) == len(ids)
    assert "0" * 32 not in ids
    logged = re.findall(r'"GET /page HTTP/1.1" 200 .* request_id=([0-9a-f]{32}) ', access_log(tmp_path).read_text())
    assert logged == ids


NGINX_ADDRESS = "127.0.0.1"  # where nginx connects to the servers from
PASSWORD_FAILURES_A_MINUTE = 10  # the login throttle, per client IP
MINUTE = 60


@pytest.fixture(scope="module")
def node() -> Iterator[Cluster]:
    require_engines()
    running = Cluster(
        DJANGO_SETTINGS_MODULE="tests.production.basic_auth_settings",
        SPORTS_TRUSTED_PROXY_COUNT="1",
        SPORTS_TRUSTED_PROXIES=f"{NGINX_ADDRESS}/32",
        SPORTS_METRICS="1",  # served to loopback clients only (the default SPORTS_METRICS_ALLOW)
    )
    try:
        running.start(events_in=(False,))  # one node: one gunicorn worker of 100 threads
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def proxy(node: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    http_address = node.urls[0].removeprefix("http://")
    socket_address = node.ws_urls[0].removeprefix("ws://").removesuffix("/sdk/v1/ws")
    site = site_configuration(listen=port, http_address=http_address, socket_address=socket_address)
    main = main_configuration(tmp_path_factory.mktemp("nginx"), site)
    with running_nginx(main, port) as url:
        yield url


def answers_health(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/healthz", timeout=PROBE_TIMEOUT_SECONDS).status_code == 200
    except httpx2.TransportError:
        return False


@contextmanager
def slow_clients(url: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that each send the start of a request and then nothing more (slowloris)."""
    host, _, port = url.removeprefix("http://").partition(":")
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            connection = socket.create_connection((host, int(port)), timeout=5)
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            held.append(connection)
        yield held
    finally:
        for connection in held:
            connection.close()


def still_open(connection: socket.socket) -> bool:
    """True while the server has neither answered nor closed this connection."""
    connection.setblocking(False)
    try:
        connection.recv(1)  # returns an answer's first byte, or b"" once closed
    except BlockingIOError:
        return True  # nothing to read: still waiting for the rest of the request
    except OSError:
        return False
    finally:
        connection.setblocking(True)
    return False


def test_health_answers_through_the_proxy_while_230_slow_clients_hold_connections(proxy: str) -> None:
    with slow_clients(proxy, SLOW_CLIENTS) as held:
        probes = [answers_health(proxy) for _ in range(5)]
        assert all(still_open(connection) for connection in held)  # the slow clients were still there
    assert probes == [True] * 5


def test_straight_to_gunicorn_the_same_slow_clients_take_health_down(node: Cluster, proxy: str) -> None:
    """Why the proxy is required: without it the attack works (and the proxy test above can fail)."""
    site = node.urls[0]
    with slow_clients(site, SLOW_CLIENTS):
        assert not answers_health(site)
    deadline = time.monotonic() + 30
    while not answers_health(site):  # the slow clients gone, gunicorn recovers
        assert time.monotonic() < deadline, "gunicorn did not recover within 30 s of the slow clients leaving"
    assert answers_health(proxy)


# --- who is believed --------------------------------------------------------------------------------


def log_in_from(url: str, source: str, password: str, forwarded: str | None = None) -> int:
    """The status of one login at `url`, connecting from `source`, with `forwarded` as X-Forwarded-For."""
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    with client_from(url, source) as browser:
        form = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/accounts/login/").text)
        assert form is not None
        data = {"username": USERNAME, "password": password, "csrfmiddlewaretoken": form.group(1)}
        return browser.post("/accounts/login/", data=data, headers=headers).status_code


def test_straight_to_gunicorn_a_new_forwarded_address_each_time_still_counts_by_the_peer(node: Cluster) -> None:
    (attacker,) = fresh_addresses(1)  # not the proxy
    answers = [
        log_in_from(node.urls[0], attacker, f"guess-{number}", forwarded=f"198.51.100.{number}")
        for number in range(PASSWORD_FAILURES_A_MINUTE + 1)
    ]
    assert answers == [200] * PASSWORD_FAILURES_A_MINUTE + [429]


def test_a_spoofed_forwarded_address_locks_out_only_the_one_who_sent_it(node: Cluster, proxy: str) -> None:
    through_nginx, past_nginx, real_user = fresh_addresses(3)
    # Through nginx, which appends the address it saw: the attacker's own.
    through = [log_in_from(proxy, through_nginx, "guess", forwarded=real_user) for _ in range(11)]
    assert through[-1] == 429
    # Past nginx, straight to gunicorn: not the proxy, so the header is not read.
    past = [log_in_from(node.urls[0], past_nginx, "guess", forwarded=real_user) for _ in range(11)]
    assert past[-1] == 429
    assert log_in_from(proxy, real_user, PASSWORD) == 302  # the real user logs in


# However the header spells the scheme, DRF's BasicAuthentication checks the password (it splits on any white
# space and ignores the scheme's letter case), so the throttle counts it.
BASIC_SPELLINGS = {"space": "Basic {}", "tab": "Basic\t{}", "spaces": "Basic   {}", "case": "bASIC {}"}


@pytest.mark.parametrize("spelling", BASIC_SPELLINGS)
def test_basic_passwords_at_the_route_are_throttled(node: Cluster, proxy: str, spelling: str) -> None:
    """Wrong Basic passwords, however spelled, were 401 and then the right one 403 csrf_failed (an oracle): each
    is one failure of the login throttle, and the eleventh attempt is 429 without a check."""
    (attacker,) = fresh_addresses(1)
    with client_from(proxy, attacker) as caller:

        def basic(password: str) -> httpx2.Response:
            credentials = base64.b64encode(f"{USERNAME}:{password}".encode()).decode()
            authorization = BASIC_SPELLINGS[spelling].format(credentials)
            return caller.post("/api/sports-token", json={}, headers={"Authorization": authorization})

        failures = [basic(f"guess-{number}").status_code for number in range(PASSWORD_FAILURES_A_MINUTE)]
        assert failures == [401] * PASSWORD_FAILURES_A_MINUTE
        refused = basic(PASSWORD)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= MINUTE
    assert refused.headers["Cache-Control"] == "no-store"
    assert log_in_from(node.urls[0], attacker, PASSWORD) == 429  # the forms share the count


def test_metrics_fail_closed_where_the_proxy_names_no_client(node: Cluster, proxy: str) -> None:
    """A request from the trusted proxy's address without X-Forwarded-For (nginx passing only X-Real-IP) came
    from an unknown client: /metrics is 404, as for any client not allowed. Through the documented nginx, a
    loopback client is itself, and allowed."""
    (client,) = fresh_addresses(1)
    with client_from(proxy, client) as through_nginx:
        assert through_nginx.get("/metrics").status_code == 200
    unnamed = httpx2.get(f"{node.urls[0]}/metrics", headers={"X-Real-IP": "203.0.113.9"}, timeout=10)
    assert unnamed.status_code == 404


def test_only_the_proxy_chooses_the_request_id(node: Cluster, proxy: str) -> None:
    """gunicorn as `make serve` runs it: an X-Request-ID from the proxy's address is the request's, answered back;
    a client past the proxy gets a new id whatever it sends. Through nginx every answer carries one."""
    from_the_proxy = httpx2.get(f"{node.urls[0]}/healthz", headers={"X-Request-ID": "nginx-id-1"}, timeout=10)
    assert from_the_proxy.headers["X-Request-ID"] == "nginx-id-1"
    (stranger,) = fresh_addresses(1)
    with client_from(node.urls[0], stranger) as past_the_proxy:
        chosen = past_the_proxy.get("/healthz", headers={"X-Request-ID": "chosen-by-the-client"})
    assert re.fullmatch("[0-9a-f]{32}", chosen.headers["X-Request-ID"])
    assert re.fullmatch(r"[\w.:+=/@-]{1,128}", httpx2.get(f"{proxy}/healthz", timeout=10).headers["X-Request-ID"])
