"""Two server processes sharing PostgreSQL and Redis behave as one site, and restart one at a time behind nginx
without losing a request."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
from websockets.asyncio.client import ClientConnection, connect

from tests.production.cluster import PING_AFTER_SECONDS, Cluster, free_port, logged_in, mint
from tests.production.nginx import access_log, main_configuration, nginx_binary, site_configuration
from tests.support import envelope

IDLE_SECONDS = 2 * PING_AFTER_SECONDS + 5  # past channels_redis's 5 s blocking read three times over, and two pings


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


def test_the_sandbox_account_quota_is_one_quota_across_both_processes(cluster: Cluster) -> None:
    key = cluster.new_key("cluster-quota", "free")  # 60 requests per minute
    if datetime.now(UTC).second > 45:  # the quota counts clock minutes: start in a fresh one
        time.sleep(61 - datetime.now(UTC).second)
    answers = [
        httpx2.post(
            f"{cluster.urls[turn % 2]}/sdk/v1/rpc",
            json=envelope("auth"),
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        ).json()
        for turn in range(70)
    ]
    assert sum("result" in answer for answer in answers) == 60
    assert [answer["error"]["code"] for answer in answers if "error" in answer] == ["rate_limited"] * 10


def test_an_event_published_by_one_process_reaches_a_subscriber_of_the_other(cluster: Cluster) -> None:
    publisher, subscriber = cluster.ws_urls
    key = cluster.new_key("cluster-ws", "starter")

    async def scenario() -> dict[str, object]:
        auth = json.dumps(envelope("auth", {"apiKey": key}))
        async with connect(publisher) as keeps_simulation_running, connect(subscriber) as listener:
            await keeps_simulation_running.send(auth)
            await keeps_simulation_running.recv()
            await listener.send(auth)
            await listener.recv()
            await listener.send(json.dumps(envelope("matches.subscribe", {})))
            await listener.recv()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            event: dict[str, object] = {"method": "ping"}
            while event.get("method") == "ping":  # a quiet moment of the simulation
                event = json.loads(await asyncio.wait_for(listener.recv(), deadline - loop.time()))
            return event

    # Only the first process runs the simulation (SPORTS_SANDBOX_EVENTS=0 on the second).
    event = asyncio.run(scenario())
    assert event["method"] == "matches.event"


def test_every_event_reaches_300_subscribers_on_both_processes_in_the_same_order(cluster: Cluster) -> None:
    """Sockets spread over both processes, events from the first: every socket sees the same events."""
    keys = [cluster.new_key(f"cluster-fan-out-{number}", "business") for number in range(4)]  # 100 sockets each
    urls = cluster.ws_urls

    async def subscriber(index: int, opening: asyncio.Semaphore) -> ClientConnection:
        async with opening:
            socket = await connect(urls[index % 2], max_queue=None)
            await socket.send(json.dumps(envelope("auth", {"apiKey": keys[index % 4]})))
            assert "result" in json.loads(await asyncio.wait_for(socket.recv(), 10))
            await socket.send(json.dumps(envelope("matches.subscribe", {"sports": ["football"]})))
            assert "result" in json.loads(await asyncio.wait_for(socket.recv(), 10))
        return socket

    async def events_of(socket: ClientConnection, until: float) -> list[tuple[str, str]]:
        seen = []
        while (left := until - time.monotonic()) > 0:
            try:
                frame = json.loads(await asyncio.wait_for(socket.recv(), left))
            except TimeoutError:
                break
            if frame.get("method") == "matches.event":
                seen.append((frame["params"]["match"]["updatedAt"], frame["params"]["match"]["id"]))
        await socket.close()
        return seen

    async def scenario() -> tuple[str, str, list[list[tuple[str, str]]]]:
        opening = asyncio.Semaphore(20)
        sockets = await asyncio.gather(*(subscriber(index, opening) for index in range(300)))
        first = datetime.now(UTC).isoformat()  # every socket is subscribed from here on
        received = await asyncio.gather(*(events_of(socket, time.monotonic() + 12) for socket in sockets))
        last = (datetime.now(UTC) - timedelta(seconds=3)).isoformat()  # later ones may still be on the way
        return first, last, list(received)

    first, last, received = asyncio.run(scenario())
    windows = [[event for event in events if first <= event[0] <= last] for events in received]
    assert len(windows[0]) >= 2  # an event every 3 s
    assert windows[0] == sorted(windows[0])  # in the order the service produced them
    assert all(window == windows[0] for window in windows)


def test_the_database_going_away_is_internal_error_and_the_service_recovers(cluster: Cluster) -> None:
    import psycopg

    from tests import stores

    key = cluster.new_key("cluster-db", "starter")
    url = f"{cluster.urls[0]}/sdk/v1/rpc"

    def call(credential: str, method: str = "auth") -> dict[str, object]:
        answer: dict[str, object] = httpx2.post(
            url, json=envelope(method, {}), headers={"Authorization": f"Bearer {credential}"}, timeout=10
        ).json()
        return answer

    token = httpx2.post(
        url, json=envelope("tokens.create", {"ttl": 600}), headers={"Authorization": f"Bearer {key}"}, timeout=10
    ).json()["result"]["token"]
    with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{cluster.database}" ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [cluster.database])
        try:
            refused = call(key)
            assert refused["error"] == {
                "code": "internal_error",
                "message": "The service hit an unexpected error; it has been logged.",
            }
            assert "result" in call(token, "matches.list")  # a token needs no database
        finally:
            admin.execute(f'ALTER DATABASE "{cluster.database}" ALLOW_CONNECTIONS true')
    assert "result" in call(key)


def test_idle_authenticated_sockets_stay_open_on_both_processes_past_two_pings(cluster: Cluster) -> None:
    """Nothing arrives on an unsubscribed socket's channel; the layer's blocking read must not time out."""
    key = cluster.new_key("cluster-idle", "growth")
    assert len(cluster.urls) == 2

    async def hold(url: str) -> list[dict[str, object]]:
        frames: list[dict[str, object]] = []
        async with connect(url) as socket:
            await socket.send(json.dumps(envelope("auth", {"apiKey": key})))
            frames.append(json.loads(await socket.recv()))
            deadline = asyncio.get_running_loop().time() + IDLE_SECONDS
            while (left := deadline - asyncio.get_running_loop().time()) > 0:
                try:
                    frames.append(json.loads(await asyncio.wait_for(socket.recv(), left)))
                except TimeoutError:
                    break
            await socket.send(json.dumps(envelope("matches.list", {"limit": 1})))
            frames.append(json.loads(await asyncio.wait_for(socket.recv(), 10)))
        return frames

    async def both() -> list[list[dict[str, object]]]:
        return list(await asyncio.gather(*(hold(url) for url in cluster.ws_urls)))

    for frames in asyncio.run(both()):
        assert "result" in frames[0]
        assert all(frame.get("method") == "ping" for frame in frames[1:-1])  # only the liveness pings
        assert "result" in frames[-1]  # still open, and answering, after a minute of silence


def test_revoking_a_key_closes_its_sockets_on_every_process_within_2_s(cluster: Cluster) -> None:
    """`sandbox_key revoke` is a third process that shares only the database with the servers."""
    created = cluster.manage("sandbox_key", "create", "--account", "cluster-revoke", "--tier", "growth")
    assert len(cluster.urls) == 2
    key_id = re.search(r"key (key_\w+) for", created).group(1)  # type: ignore[union-attr]
    key = created.splitlines()[-1]

    async def scenario() -> list[tuple[dict[str, object], int | None, float]]:
        sockets = [await connect(url) for url in cluster.ws_urls]
        for socket in sockets:
            await socket.send(json.dumps(envelope("auth", {"apiKey": key})))
            assert "result" in json.loads(await socket.recv())
        await asyncio.to_thread(cluster.manage, "sandbox_key", "revoke", key_id)
        revoked_at = time.monotonic()

        async def closing(socket: ClientConnection) -> tuple[dict[str, object], int | None, float]:
            notice = json.loads(await asyncio.wait_for(socket.recv(), 5))
            await asyncio.wait_for(socket.wait_closed(), 5)
            return notice, socket.close_code, time.monotonic() - revoked_at

        return list(await asyncio.gather(*(closing(socket) for socket in sockets)))

    for notice, close_code, seconds in asyncio.run(scenario()):
        assert notice == {"jsonrpc": "2.0", "method": "auth.revoked", "params": {}}
        assert close_code == 4401
        assert seconds < 2


# --- a rolling restart behind nginx ---------------------------------------------------------------------------


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
def test_a_killed_workers_sockets_free_their_slots(cluster: Cluster) -> None:
    key = cluster.new_key("cluster-killed", "free")  # 2 connections
    url, survivor = cluster.ws_urls[1], cluster.ws_urls[0]
    node, worker = cluster.processes[1], cluster.socket_server(1)

    async def hold_two_sockets_then_get_killed() -> None:
        auth = json.dumps(envelope("auth", {"apiKey": key}))
        first, second = await connect(url), await connect(url)
        for socket in (first, second):
            await socket.send(auth)
            assert "result" in json.loads(await socket.recv())
        os.kill(worker, signal.SIGKILL)  # no clean close: the slots are forgotten only when their heartbeat runs out
        for socket in (first, second):  # the kernel closes a killed process's sockets at once
            await asyncio.wait_for(socket.wait_closed(), 10)

    async def connect_twice(target: str) -> list[dict[str, object]]:
        answers = []
        async with connect(target) as one, connect(target) as two:
            for socket in (one, two):
                await socket.send(json.dumps(envelope("auth", {"apiKey": key})))
                answers.append(json.loads(await socket.recv()))
        return answers

    asyncio.run(hold_two_sockets_then_get_killed())
    # At once, within the two heartbeats (1 s each, SPORTS_SANDBOX_SLOT_HEARTBEAT in the cluster)
    # that the dead sockets still count for:
    refused = asyncio.run(connect_twice(survivor))
    assert [answer.get("error", {}).get("code") for answer in refused] == ["rate_limited", "rate_limited"]

    node.wait(timeout=30)  # its launcher stops the node's HTTP server too, and exits
    assert node.returncode == 128 + signal.SIGKILL  # config.serve exits as the server that ended did
    cluster.processes.remove(node)
    del cluster.urls[1], cluster.ws_urls[1]
    time.sleep(2.5)
    assert all("result" in answer for answer in asyncio.run(connect_twice(survivor)))
