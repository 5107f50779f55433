"""A redis-server of a test's own (the shared one on 6379 is never flushed, stopped or frozen), as a
primary, a replica of another, or a Sentinel watching one; and `round_trips`, what redis-py sends counted."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.production.cluster import free_port


def require_redis_server() -> None:
    """Skip the test where `redis-server` is not installed; under CI fail it, so a run never passes by skipping."""
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
        pytest.skip("redis-server is not installed")


class RedisServer:
    """A redis-server of the test's own, on a free port, that the test can stop and start; a replica of
    `primary` when given one."""

    def __init__(self, primary: RedisServer | None = None) -> None:
        self.port = free_port()
        self.primary = primary
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if self.primary is not None:
            command += ["--replicaof", "127.0.0.1", str(self.primary.port)]
        command += ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--repl-diskless-load", "swapdb"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)  # noqa: S603 - fixed command
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def wait_in_sync(self) -> None:
        """Until this replica has its primary's data (bounded)."""
        deadline = time.monotonic() + 10
        while redis.Redis.from_url(self.url).info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline, "the replica did not sync within 10 s"
            time.sleep(0.05)

    def make_replica_of(self, primary_port: int) -> None:
        """Made a replica of the primary on `primary_port`, as Sentinel does after a failover."""
        redis.Redis(port=self.port, socket_timeout=2).replicaof("127.0.0.1", primary_port)

    def hang(self) -> None:
        """Stopped, not gone: the kernel still accepts connections and takes requests, nothing answers."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None:
            self.resume()  # a stopped process would never act on the terminate
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


class SentinelServer(RedisServer):
    """A Redis Sentinel of the test's own, watching `primary` as the service SERVICE (quorum 1 unless given:
    how many Sentinels must agree that the primary is down)."""

    SERVICE = "sitecache"

    def __init__(
        self, primary: RedisServer, folder: Path, down_after_ms: int = 1000, quorum: int = 1, password: str = ""
    ) -> None:
        super().__init__()
        self.watched = primary
        self.config = folder / f"sentinel-{self.port}.conf"
        self.down_after_ms = down_after_ms
        self.quorum = quorum
        self.password = password  # the Sentinel's own `requirepass`, when given

    def start(self) -> None:
        # Sentinel rewrites its configuration file as it learns, so each gets a file of its own.
        self.config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.config.parent}\n"
            f"sentinel monitor {self.SERVICE} 127.0.0.1 {self.watched.port} {self.quorum}\n"
            f"sentinel down-after-milliseconds {self.SERVICE} {self.down_after_ms}\n"
            f"sentinel failover-timeout {self.SERVICE} 5000\n"
            + (f"requirepass {self.password}\n" if self.password else "")
        )
        command = ["redis-server", str(self.config), "--sentinel"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)  # noqa: S603 - fixed command
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis(port=self.port, password=self.password or None, socket_connect_timeout=0.2).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server --sentinel did not start")

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, password=self.password or None, socket_timeout=2, decode_responses=True)

    def primary_port(self) -> int:
        """The primary as SENTINEL MASTERS names it, which redis-py asks: it moves only when the failover
        ends (get-master-addr-by-name moves sooner, while the other replicas are still reconfigured)."""
        return int(self.client().sentinel_masters()[self.SERVICE]["port"])

    def fail_over(self) -> int:
        """SENTINEL FAILOVER as soon as Sentinel knows a replica, then the new primary's port once Sentinel
        names it (each wait bounded). The old primary still takes writes until Sentinel makes it a replica
        (at its next look at it, up to 10 s later): `make_replica_of` does that at once."""
        before = self.primary_port()
        deadline = time.monotonic() + 15
        while True:
            try:
                self.client().execute_command("SENTINEL", "FAILOVER", self.SERVICE)
                break
            except redis.ResponseError:  # NOGOODSLAVE: it has not met the replica yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        while (after := self.primary_port()) == before:
            assert time.monotonic() < deadline, "Sentinel named no new primary within 15 s"
            time.sleep(0.05)
        return after


@contextmanager
def round_trips() -> Iterator[list[int]]:
    """Counts what redis-py sends: one round trip per command, pipeline or script."""
    from redis.connection import AbstractConnection

    sent = [0]
    original = AbstractConnection.send_packed_command

    def send(connection: Any, command: Any, check_health: bool = True) -> None:
        sent[0] += 1
        original(connection, command, check_health)

    AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        AbstractConnection.send_packed_command = original  # type: ignore[method-assign]
