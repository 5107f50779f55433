"""The socket server's ASGI application (`config.socket_asgi.application`): the sandbox's WebSocket
at `/sdk/v1/ws`, and nothing else.

`make serve` runs it in uvicorn beside gunicorn (config/serve.py). The site's pages, its login forms,
the mint route and the admin are gunicorn's, behind the proxy that holds slow clients: here any other
request is answered 404 at once, its body never read, and a WebSocket handshake for another path is
refused the same way.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)  # before the consumers' models are imported

from channels.routing import URLRouter  # noqa: E402

from sportsproxy.sandbox.routing import websocket_urlpatterns  # noqa: E402

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SOCKET_PATH = "/sdk/v1/ws"
NOT_FOUND = b"Not found: this server serves only the WebSocket at " + SOCKET_PATH.encode() + b".\n"
NOT_FOUND_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")]

socket_router = URLRouter(websocket_urlpatterns)


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket" and scope["path"] == SOCKET_PATH:
        await socket_router(scope, receive, send)  # type: ignore[arg-type]  # asgiref's typed events
    elif scope["type"] == "websocket":
        await _refuse_handshake(scope, send)
    elif scope["type"] == "http":
        await _not_found(send)
    # "lifespan": nothing to start or stop (make serve runs uvicorn with --lifespan off)


async def _not_found(send: Send) -> None:
    """404 before the body is read: uvicorn then closes the connection rather than read what is left."""
    headers = [*NOT_FOUND_HEADERS, (b"content-length", str(len(NOT_FOUND)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": NOT_FOUND})


async def _refuse_handshake(scope: Scope, send: Send) -> None:
    """A handshake for another path: 404 where the server can answer one (ASGI's WebSocket denial
    response extension), else closed before it is accepted (uvicorn answers 403)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        headers = [*NOT_FOUND_HEADERS, (b"content-length", str(len(NOT_FOUND)).encode())]
        await send({"type": "websocket.http.response.start", "status": 404, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": NOT_FOUND})
    else:
        await send({"type": "websocket.close", "code": 1008})
