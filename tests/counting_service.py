"""A stand-in for the service's `tokens.create` on a real socket, which counts the tokens it mints and
can be switched, while the site runs, to fail in each way the route answers.

Modes: "ok" (a token), "down" (nothing listens: connections are refused), "hanging" (reads the
request, never answers), "rate_limited", "unauthorized" (the service's error envelopes), "garbage"
(an HTML page). `lifetime` sets how long the tokens it mints live (default: the requested ttl), so
a test can hand the site a token with little life left without waiting for it to age; `now` is its
clock (the bench gives it the simulated one it gives the site).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.upstreams import _read_request, http_response

MODES = ("ok", "down", "hanging", "rate_limited", "unauthorized", "garbage")


class CountingService:
    def __init__(self, *, delay: float = 0.0, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.now = now
        self.delay = delay  # seconds before each answer, so concurrent callers overlap a mint
        self.lifetime: float | None = None
        self.mints = 0  # tokens handed out
        self.requests = 0  # requests answered or held, whatever the mode
        self._mode = "ok"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: socket.socket | None = None
        self._port = 0
        self._listen()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def switch(self, mode: str, *, lifetime: float | None = None) -> None:
        """Behave as `mode` from the next request on; "down" stops listening, any other mode listens again."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.lifetime = lifetime
        if mode == "down" and self._server is not None:
            self._close_listener()
        elif mode != "down" and self._server is None:
            self._listen()
        self._mode = mode

    def reset(self) -> None:
        self.switch("ok")
        with self._lock:
            self.mints = self.requests = 0

    def close(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._close_listener()

    def _close_listener(self) -> None:
        """Stop listening now: shutdown wakes the thread blocked in accept (close alone would not, on Linux)."""
        assert self._server is not None
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._server = None

    def _listen(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self._port))
        server.listen(128)
        self._port = server.getsockname()[1]
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                return  # closed: "down", or the end
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            body = _read_request(connection)
            with self._lock:
                self.requests += 1
            if self._mode == "hanging":
                self._stop.wait(30)
                return
            time.sleep(self.delay)
            connection.sendall(self._answer(body))

    def _answer(self, body: bytes) -> bytes:
        try:
            request: dict[str, Any] = json.loads(body)
        except ValueError:
            request = {}
        request_id = request.get("id")
        if self._mode == "garbage":
            return http_response(b"<h1>Bad gateway</h1>", status="502 Bad Gateway", content_type="text/html")
        if self._mode in ("rate_limited", "unauthorized"):
            error = {"code": self._mode, "message": "Refused by the stand-in."}
            return http_response(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())
        with self._lock:
            self.mints += 1
            serial = self.mints
        ttl = (request.get("params") or {}).get("ttl", 600)
        expires_at = self.now() + timedelta(seconds=self.lifetime if self.lifetime is not None else ttl)
        result = {"token": f"standin.{serial}.signature", "expiresAt": expires_at.isoformat(timespec="seconds")}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode())
