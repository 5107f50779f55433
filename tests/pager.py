"""A webhook receiver that stands in for the on-call pager: Alertmanager posts its notifications to it, and the
tests and the outage drill (tests/drill/outage.py) ask which pages arrived when."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Pager:
    """Every notification Alertmanager posts to this receiver's free port, with when it arrived by `clock`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._received: list[tuple[float, dict[str, Any]]] = []
        pager = self

        class Receive(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with pager._lock:
                    pager._received.append((clock(), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def pages(self, since: float, until: float = math.inf) -> list[tuple[float, dict[str, Any]]]:
        """The notifications of firing alerts that reached the on-call receiver from `since` to `until`, with when."""
        with self._lock:
            received = list(self._received)
        return [
            (arrived, body)
            for arrived, body in received
            if since <= arrived < until and body["receiver"] == "on-call" and body["status"] == "firing"
        ]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
