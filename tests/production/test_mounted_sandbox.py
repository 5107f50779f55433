"""The sandbox a site mounts as its service, served by two processes sharing PostgreSQL and Redis: one account
quota, every event to every subscriber of either process in one order, sockets kept open past the pings, a revoked
key's sockets closed on both, a killed worker's sockets freed. A product whose sandbox is for its tests only never
mounts it, and does not carry this module (copier.yml)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from datetime import UTC, datetime, timedelta

import httpx2
from websockets.asyncio.client import ClientConnection, connect

from tests.production.cluster import PING_AFTER_SECONDS, Cluster
from tests.support import envelope

IDLE_SECONDS = 2 * PING_AFTER_SECONDS + 5  # past channels_redis's 5 s blocking read three times over, and two pings


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
