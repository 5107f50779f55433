"""Two server processes sharing PostgreSQL and Redis behave as one site, and restart one at a time behind nginx
without losing a request. The sandbox such a site mounts, served by both: tests/production/test_mounted_sandbox.py."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

from tests.production.cluster import Cluster, free_port, logged_in, mint
from tests.production.nginx import access_log, main_configuration, nginx_binary, site_configuration


def test_sessions_and_the_mint_route_limit_are_shared_by_both_processes(cluster: Cluster) -> None:
    first, second = cluster.urls
    browser = logged_in(first)
    try:
        assert browser.get(f"{second}/").status_code == 200  # the session made on the first is known to the second
        statuses = [mint(browser, cluster.urls[turn % 2]).status_code for turn in range(10)]
    finally:
        browser.close()
    # SPORTS_TOKEN_RATE is 5/h per user and per IP: one limit for both processes, not one each.
    assert statuses == [200] * 5 + [429] * 5


class Stream:
    """Clients of the site behind nginx, each asking one request after another, both kinds in turn: a POST
    of the route (401 without a login: nginx passes no POST on to another server once it sent it) and a page."""

    EXPECTED = {"POST": 401, "GET": 200}

    def __init__(self, url: str, clients: int = 3) -> None:
        self.url = url
        self.answers: list[tuple[str, int | str]] = []  # (method, status or the error's name and text)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._ask, daemon=True) for _ in range(clients)]

    def __enter__(self) -> Stream:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _ask(self) -> None:
        with httpx2.Client(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                for method, path in (("POST", "/api/sports-token"), ("GET", "/accounts/login/")):
                    try:
                        self.answers.append((method, client.request(method, path).status_code))
                    except httpx2.HTTPError as error:
                        self.answers.append((method, f"{type(error).__name__}: {error}"))
                time.sleep(0.02)

    def unexpected(self) -> list[tuple[str, int | str]]:
        return [(method, answer) for method, answer in self.answers if answer != self.EXPECTED[method]]


def answered_by(log: Path) -> list[str]:
    """The server that answered each request in nginx's access log, in order: the last address of the documented
    format's `upstream=` (nginx lists every server it tried, "refused, answered")."""
    text = log.read_text() if log.exists() else ""
    return [tried.split(", ")[-1] for tried in re.findall(r" upstream=(.*?) upstream_status=", text)]


def until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.1)


@contextmanager
def two_node_nginx(cluster: Cluster, folder: Path) -> Iterator[str]:
    """docs/deploy.md's nginx with both nodes in its upstream, as its rolling restart says; its URL. To keep to
    seconds, its upstream keep-alive is cut from 4 s to 1 s, with the cluster's drain (WEB_DRAIN_SECONDS 1.5) above
    it as 5 s is above 4 s, and nginx tries a server that refused again after 1 s (fail_timeout) instead of 10 s."""
    first, second = (url.removeprefix("http://") for url in cluster.urls)
    port = free_port()
    site = site_configuration(listen=port, http_address=first)
    both = f"server {first} fail_timeout=1s;\n    server {second} fail_timeout=1s;"
    assert site.count(f"server {first};") == site.count("keepalive_timeout 4s;") == 1
    site = site.replace(f"server {first};", both).replace("keepalive_timeout 4s;", "keepalive_timeout 1s;")
    nginx = subprocess.Popen([nginx_binary(), "-c", str(main_configuration(folder, site))])  # noqa: S603 - our file
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: _answers(url), 15, "nginx did not answer")
        yield url
    finally:
        nginx.terminate()
        nginx.wait(timeout=15)


def _answers(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/healthz", timeout=5).status_code == 200
    except httpx2.TransportError:
        return False


def restart_in_turn(cluster: Cluster, node: int, log: Path) -> None:
    """The recipe's steps for one node: SIGTERM (it drains, then exits), start it again, and wait until nginx
    sends it requests again (it tries a server that refused after fail_timeout)."""
    cluster.processes[node].send_signal(signal.SIGTERM)
    assert cluster.processes[node].wait(timeout=30) == 0
    cluster.restart(node)
    address, restarted = cluster.urls[node].removeprefix("http://"), len(answered_by(log))
    until(lambda: address in answered_by(log)[restarted:], 15, f"nginx did not send node {node} requests again")


def test_a_rolling_restart_behind_nginx_loses_no_request(cluster: Cluster, tmp_path: Path) -> None:
    """docs/deploy.md's rolling restart under a steady stream: each node in turn SIGTERMed (it drains: it answers
    what nginx sends it, closing each connection, then refuses new ones), started again on its address, and
    waited for in nginx's log. Every answer is the site's own, none a 502 or a reset, and nginx logs no
    connection that failed after a request was sent on it (only refused connects, which it passes on)."""
    assert cluster.environment["WEB_DRAIN_SECONDS"] == "1.5"
    addresses = [url.removeprefix("http://") for url in cluster.urls]
    with two_node_nginx(cluster, tmp_path) as url, Stream(url) as stream:
        log = access_log(tmp_path)
        until(lambda: set(answered_by(log)) >= set(addresses), 15, "nginx did not send requests to both nodes")
        for node in range(len(addresses)):
            restart_in_turn(cluster, node, log)
    assert len(stream.answers) > 100
    assert stream.unexpected() == []
    trouble = [line for line in (tmp_path / "error.log").read_text().splitlines() if "upstream" in line]
    assert all("(111: Connection refused)" in line or "temporarily disabled" in line for line in trouble), trouble


# Last: it kills the second process, which the tests above need.
