"""Tiny real socket servers standing in for an upstream that misbehaves on demand.

A mock of httpx2 could not show what the SDK does with a real refused connection, a
real silent socket or real garbage bytes; these can.
"""

from __future__ import annotations

import functools
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Reply = Callable[[bytes], bytes | None]  # request body -> raw HTTP response bytes, or None to stay silent
RESET = b"<reset>"  # a reply that sends half an answer, then resets the connection


def http_response(body: bytes, *, status: str = "200 OK", content_type: str = "application/json") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def _read_request(connection: socket.socket) -> bytes:
    return _read_head_and_body(connection)[1]


def _read_head_and_body(connection: socket.socket) -> tuple[dict[str, str], bytes]:
    """The request's headers (names in lower case) and its body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return {}, b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return headers, body


@contextmanager
def fake_upstream(reply: Reply, *, heads: list[dict[str, str]] | None = None) -> Iterator[str]:
    """Serve `reply` on 127.0.0.1 (a free port) and yield the base URL; stops on exit. Each request's
    headers are appended to `heads` when it is given."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    open_connections: list[socket.socket] = []

    def serve(connection: socket.socket) -> None:
        with connection:
            headers, body = _read_head_and_body(connection)
            if heads is not None:
                heads.append(headers)
            answer = reply(body)
            if answer is None:
                stop.wait(30)  # hold the connection open without a word
                return
            if answer == RESET:
                connection.sendall(http_response(b'{"jsonrpc": "2.0", "id": "x", "res' + b" " * 100)[:-60])
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return  # closing with linger 0 sends RST
            connection.sendall(answer)

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                return
            open_connections.append(connection)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()
        for connection in open_connections:
            connection.close()


@functools.cache
def closed_port_url() -> str:
    """A base URL on which nothing listens (connections are refused): a port this process keeps bound and never
    listens on. A port closed again at once could be taken by the next server any test process starts (port 0),
    which then answers what was meant to be refused."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    _HELD.append(holder)
    return f"http://127.0.0.1:{holder.getsockname()[1]}"


_HELD: list[socket.socket] = []  # the sockets closed_port_url keeps bound for the life of the process


def truncated_response(body: bytes) -> bytes:
    """Headers that promise more body than is sent before the connection closes."""
    promised = len(body) + 50
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {promised}\r\n\r\n"
    return head.encode() + body
