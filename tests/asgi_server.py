"""The project's ASGI application on a real socket, served by uvicorn in a thread of the test process.

Same process means the same test database and the same sandbox clock, so a test can
move time while a real WebSocket client talks to a real server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serve_asgi(app: object) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (a free port); yields `host:port`."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", ws="websockets-sansio")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start within 10 s")
        time.sleep(0.01)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    try:
        yield f"{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
