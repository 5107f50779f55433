"""A redis-server of a test's own (the shared one on 6379 is never flushed, stopped or frozen)."""

from __future__ import annotations

import signal
import subprocess
import time

import redis

from tests.production.cluster import free_port


class RedisServer:
    """A redis-server of the test's own, on a free port, that the test can stop and start."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)  # noqa: S603 - fixed command
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

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
