"""The real-time rows of `make bench`: fan-out in one process and across two, idle sockets, revocation.

The servers are the sandbox under uvicorn, as elsewhere in the benchmark; the clients are
`tests/bench/socket_clients.mjs` processes (Node's own WebSocket, a cheaper reader than any
Python client), so the loader's CPU is not the servers' and is reported beside it. A row that
needs Redis says "not run" without it.
"""

from __future__ import annotations

import json
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tests import stores

if TYPE_CHECKING:
    from tests.bench.run_bench import Bench, Server

SUBSCRIBERS = int(os.environ.get("BENCH_SUBSCRIBERS", "1000"))
IDLE_SOCKETS = int(os.environ.get("BENCH_IDLE_SOCKETS", "5000"))
WINDOW_SECONDS = float(os.environ.get("BENCH_FAN_OUT_SECONDS", "10"))
GRACE_SECONDS = 3.0  # an event of the window still counts as delivered if it arrives this late
CLIENT_PROCESSES = 2  # one loader process per core: a single one would be the bottleneck
REVOKED_KEYS = 20
SOCKETS_PER_REVOKED_KEY = 10
# A database of the tests' Redis (tests/stores.py), flushed before the rows: the bench never runs beside the suite.
REDIS_URL = stores.redis_url(5)
# channels_redis's two layers, measured side by side; config/settings.py uses CONFIGURED_LAYER.
CONFIGURED_LAYER = "RedisPubSubChannelLayer"
LAYERS = {
    "RedisPubSubChannelLayer": "channels_redis.pubsub.RedisPubSubChannelLayer",
    "RedisChannelLayer": "channels_redis.core.RedisChannelLayer",
}


class ClientProcess:
    """One `socket_clients.mjs` process: its sockets are open when the constructor returns."""

    def __init__(self, urls: list[str], keys: list[str], sockets: int, mode: str = "subscribe") -> None:
        from tests.bench.run_bench import ROOT

        command = ["node", "--experimental-websocket", "--no-warnings", "tests/bench/socket_clients.mjs"]
        command += ["--sockets", str(sockets), "--mode", mode]
        for url in urls:
            command += ["--url", url.replace("http://", "ws://") + "/sdk/v1/ws"]
        for key in keys:
            command += ["--key", key]
        self.process = subprocess.Popen(  # noqa: S603 - a fixed command
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.pid = self.process.pid
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read_lines, daemon=True).start()
        self.ready = self.answer(timeout=60 + sockets / 20)
        if self.ready["failed"]:
            print(f"    {self.ready['failed']} sockets failed to open: {self.ready['errors']}", file=sys.stderr)

    def _read_lines(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def command(self, line: str, timeout: float) -> dict[str, Any]:
        self.send(line)
        return self.answer(timeout)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def answer(self, timeout: float) -> dict[str, Any]:
        try:
            return dict(json.loads(self._lines.get(timeout=timeout)))
        except queue.Empty:
            raise RuntimeError(f"the socket clients did not answer within {timeout:.0f} s") from None

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@contextmanager
def clients(*processes: Any) -> Iterator[list[ClientProcess]]:
    """Start `ClientProcess(*arguments)` for each tuple, stop them all at the end."""
    started: list[ClientProcess] = []
    try:
        for arguments in processes:
            started.append(ClientProcess(*arguments))
        yield started
    finally:
        for process in started:
            process.stop()


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def fan_out(bench: Bench, publisher: Server, receivers: list[Server]) -> tuple[str, bool]:
    """SUBSCRIBERS sockets from two client processes, each on one of the `receivers` in turn; football
    events from `publisher` for WINDOW_SECONDS; every event of the window must reach every socket."""
    from tests.bench.run_bench import cpu_use

    share = SUBSCRIBERS // CLIENT_PROCESSES
    targets = [receivers[index % len(receivers)] for index in range(CLIENT_PROCESSES)]
    with clients(*(([server.url], [bench.key], share) for server in targets)) as processes:
        ready = sum(process.ready["ready"] for process in processes)
        time.sleep(2)  # let the last subscriptions settle
        start = time.time() + 0.5
        end = start + WINDOW_SECONDS
        pids = {server.process.pid for server in (publisher, *receivers)}
        with cpu_use(*pids, *(process.pid for process in processes)) as cpu:
            for process in processes:
                process.send(f"measure {start} {end} {GRACE_SECONDS}")
            answers = [process.answer(timeout=WINDOW_SECONDS + GRACE_SECONDS + 30) for process in processes]
    received: Counter[str] = Counter()
    for answer in answers:
        received.update(answer["received"])
    latencies = sorted(latency for answer in answers for latency in answer["latencies_ms"])
    expected = ready * len(received)
    delivered = sum(received.values())
    out_of_order = sum(answer["out_of_order"] for answer in answers)
    if not latencies:
        return "no events received", False
    p50, p99 = statistics.median(latencies), percentile(latencies, 0.99)
    server_cpu = " + ".join(f"{cpu[str(pid)]:.0f}" for pid in sorted(pids))
    client_cpu = " + ".join(f"{cpu[str(process.pid)]:.0f}" for process in processes)
    value = (
        f"{p50:.1f} / {p99:.1f} ms; {delivered} of {expected} ({100 * delivered / max(expected, 1):.1f} %) "
        f"to {ready} sockets, {len(received)} events, {out_of_order} out of order; "
        f"CPU % server {server_cpu}, clients {client_cpu}"
    )
    met = ready == SUBSCRIBERS and delivered == expected and out_of_order == 0 and p50 <= 50 and p99 <= 250
    return value, met


def idle_sockets(bench: Bench, server: Server) -> tuple[str, bool]:
    """IDLE_SOCKETS authenticated sockets doing nothing: the server's CPU and memory per socket."""
    from tests.bench.run_bench import cpu_use, resident_kib

    per_process = IDLE_SOCKETS // 4
    with clients(([server.url], [bench.key], per_process, "idle")) as warm:
        time.sleep(1)
        before_kib = resident_kib(server.process.pid)
        with clients(*(([server.url], [bench.key], per_process, "idle") for _ in range(3))) as rest:
            processes = [*warm, *rest]
            ready = sum(process.ready["ready"] for process in processes)
            time.sleep(2)
            after_kib = resident_kib(server.process.pid)
            seconds = 30.0
            with cpu_use(server.process.pid) as cpu:
                for process in processes:
                    process.send(f"hold {seconds}")
                answers = [process.answer(timeout=seconds + 30) for process in processes]
    per_socket_kib = (after_kib - before_kib) / max(ready - per_process, 1)
    server_cpu = cpu[str(server.process.pid)]
    closed = sum(answer["closed"] for answer in answers)
    pings = sum(answer["pings"] for answer in answers)
    value = (
        f"CPU {server_cpu:.1f} % of a core over {seconds:.0f} s; {per_socket_kib:.1f} KiB per socket; "
        f"{ready} open, {closed} closed, {pings} pings"
    )
    return value, ready == IDLE_SOCKETS and closed == 0 and server_cpu <= 5


def revocation(bench: Bench, servers: list[Server]) -> tuple[str, bool]:
    """REVOKED_KEYS keys with sockets on every server, revoked one by one at random moments in this
    process (the database only, like `sandbox_key revoke`): the time from each revocation to each of
    its sockets' close."""
    from sportsproxy.sandbox.accounts.keys import issue_key
    from sportsproxy.sandbox.models import Account, ApiKey

    account = Account.objects.create(name="bench-revocation", tier="business")
    keys = [issue_key(account, "test") for _ in range(REVOKED_KEYS)]
    secrets = [secret for _, secret in keys]
    share = REVOKED_KEYS * SOCKETS_PER_REVOKED_KEY // len(servers)
    with clients(*(([server.url], secrets, share, "idle") for server in servers)) as processes:
        ready = sum(process.ready["ready"] for process in processes)
        revoked_at: list[float] = []
        for key, _ in keys:
            time.sleep(random.uniform(0.2, 0.6))  # noqa: S311 - spread over the watchers' polls
            ApiKey.objects.get(pk=key.pk).revoke()
            revoked_at.append(time.time())
        answers = [process.command("closes 4", timeout=40) for process in processes]
    delays = sorted(closed - revoked_at[key_index] for answer in answers for key_index, closed, _ in answer["closes"])
    codes = Counter(code for answer in answers for _, _, code in answer["closes"])
    still_open = sum(answer["open"] for answer in answers)
    if not delays:
        return "no socket closed", False
    p50, p99 = statistics.median(delays), percentile(delays, 0.99)
    value = f"p50 {p50:.2f} s, p99 {p99:.2f} s over {len(delays)} sockets of {ready}; codes {dict(codes)}"
    return value, still_open == 0 and set(codes) == {4401} and p99 <= 2


def redis_available() -> str | None:
    """Why the Redis rows cannot run, or None (and an empty benchmark database)."""
    try:
        import redis

        redis.Redis.from_url(REDIS_URL).flushdb()
    except Exception as error:
        return f"not run: {error}"
    return None
