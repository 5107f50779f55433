"""This site served on a real socket bound to `[::]`, as `make serve` behind HOST=[::]:PORT is:
IPv4 clients then arrive as IPv4-mapped addresses (`::ffff:a.b.c.d`). Any address of
127.0.0.0/8 is this machine, so a test can be several IPv4 clients at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def dual_stack_server() -> Iterator[str]:
    """Serve the site on `[::]` (a port of its own) in a thread; yields an IPv4 URL that reaches it."""
    server = ThreadedWSGIServer(("::", 0), _QuietHandler, ipv6=True, allow_reuse_address=False)
    server.set_app(WSGIHandler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def client_from(url: str, source: str) -> httpx2.Client:
    """An HTTP client of `url` whose connections come from the IPv4 address `source`."""
    return httpx2.Client(base_url=url, transport=httpx2.HTTPTransport(local_address=source), timeout=10)
