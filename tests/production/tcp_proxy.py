"""A TCP proxy a test can cut and restore: the network between a server and its database.

`cut()` stops listening and resets every open connection (the database is unreachable: new
connections are refused, open ones break); `restore()` listens again on the same port.
`silence()` keeps listening but forwards nothing: a new connection is accepted and never answered
(a database that hangs), until `restore()`. `black_hole()` does the same to the open connections too:
what either side sends is read (so TCP acknowledges it) and dropped, as a proxy in front of a
partitioned database does. A connection that lost bytes stays broken after `restore()`.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from tests import stores
from tests.production.cluster import free_port

POLL_SECONDS = 0.1


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self._silent = threading.Event()
        self._dropping = threading.Event()
        self.accepted = 0  # connections accepted since the start: how many the server opened

    def silence(self) -> None:
        """Accept new connections and never answer them (open ones keep forwarding)."""
        self._silent.set()

    def black_hole(self) -> None:
        """Accept new connections and never answer them; read and drop what the open ones send."""
        self._dropping.set()
        self._silent.set()

    def restore(self) -> None:
        """Listen (again) on `self.port` and forward every connection to the target."""
        self._silent.clear()
        self._dropping.clear()
        if self._listener is not None:
            return
        self._stop.clear()
        self._listener = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: the same port again
        self._listener.settimeout(POLL_SECONDS)
        self._acceptor = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)
        self._acceptor.start()

    start = restore

    def cut(self) -> None:
        """Refuse new connections and reset the open ones."""
        self._stop.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            for each in self._sockets:
                with contextlib.suppress(OSError):
                    each.shutdown(socket.SHUT_RDWR)
                each.close()
            self._sockets.clear()

    stop = cut

    def _accept(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            if self._silent.is_set():
                with self._lock:
                    self._sockets.add(client)  # held open, never read or answered; closed by cut()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            server.settimeout(None)
            with self._lock:
                self._sockets.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                if not self._dropping.is_set():
                    sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def postgres_proxy() -> TcpProxy:
    """A proxy (not yet started) in front of the tests' PostgreSQL server (tests/stores.py)."""
    host, port = stores.postgres_address()
    return TcpProxy(port, host)
