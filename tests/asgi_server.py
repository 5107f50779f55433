"""The project's ASGI application on a real socket, served by uvicorn in a thread of the test process.

Same process means the same test database and the same sandbox clock, so a test can
move time while a real WebSocket client talks to a real server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

ASGIApp = Callable[..., Any]  # what uvicorn.Config accepts as an application
START_TIMEOUT_SEC = 10
STOP_TIMEOUT_SEC = 10
DROP_TIMEOUT_SEC = 2  # a closing handshake its client never answers is cut after this


class AsgiServer:
    """uvicorn serving `app` on 127.0.0.1; it can be stopped and started again on the same port,
    as a server restart looks to the browsers that were connected to it."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._port = 0  # the OS picks a free port at the first start; restarts reuse it
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def address(self) -> str:
        """`host:port` of the (last) started server."""
        if self._port == 0:
            raise RuntimeError("The server has not been started yet.")
        return f"127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def start(self) -> str:
        """Serves the app; returns `host:port`. uvicorn binds through asyncio's create_server, which sets
        SO_REUSEADDR, so the port is free again at once although the old connections sit in TIME_WAIT."""
        if self._thread is not None:
            raise RuntimeError("The server is already running; stop() it first.")
        config = uvicorn.Config(
            self._app,
            host="127.0.0.1",
            port=self._port,
            log_level="warning",
            lifespan="off",
            ws="websockets-sansio",
            # The tests' callers connect from 127.0.0.1, which uvicorn trusts as a proxy by default and whose
            # X-Forwarded-For it would then take for the client's address: the route must see the peer.
            proxy_headers=False,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                server.should_exit = True
                raise RuntimeError(f"uvicorn did not start within {START_TIMEOUT_SEC} s (port {self._port})")
            time.sleep(0.01)
        self._port = server.servers[0].sockets[0].getsockname()[1]
        self._server, self._thread, self._loop = server, thread, server.servers[0].get_loop()
        return self.address

    def drop_connections(self) -> None:
        """Ends every open connection as stop() would (WebSockets close with 1012, idle keep-alive
        connections close), and keeps listening: one server can serve test after test."""
        if self._server is None or self._loop is None:
            return
        state = self._server.server_state

        async def drop() -> None:
            for connection in list(state.connections):
                connection.shutdown()
            deadline = time.monotonic() + DROP_TIMEOUT_SEC
            while state.connections and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
            for connection in list(state.connections):
                connection.transport.abort()  # type: ignore[union-attr]  # uvicorn's protocols keep their transport

        asyncio.run_coroutine_threadsafe(drop(), self._loop).result(timeout=DROP_TIMEOUT_SEC + 1)

    def stop(self) -> None:
        """Stops serving: uvicorn closes the open WebSockets (code 1012) and the listening socket."""
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        # The listening socket closes first; only a connection that never finishes could outlast this,
        # and the port is free again either way.
        self._thread.join(timeout=STOP_TIMEOUT_SEC)
        self._server = self._thread = self._loop = None


@contextmanager
def serve_asgi(app: ASGIApp) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (a free port); yields `host:port`."""
    server = AsgiServer(app)
    address = server.start()
    try:
        yield address
    finally:
        server.stop()
