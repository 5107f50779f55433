"""The server flavour's WebSocket: an authenticated socket to the service, for subscriptions.

    async with client.connect() as socket:          # sends auth {apiKey} as the first frame
        subscription_id = await socket.subscribe(sports=["football"])
        async for notification in socket:           # {"method": "matches.event", "params": {...}}
            ...

Framework-free like the rest of the SDK, and imported only when a socket is opened: it is the
one module that needs the `realtime` extra (websockets).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from sportsproxy.errors import SportsProtocolError, SportsTimeout, SportsUnavailable, api_error
from sportsproxy.service import WS_PATH

logger = logging.getLogger("sportsproxy.realtime")

# The service sends a `ping` after 25 s of silence, so a minute without any frame means the
# connection is dead (half-open): the socket is closed and its iteration ends.
SILENCE_LIMIT_SECONDS = 60.0


def websocket_url(base_url: str) -> str:
    """The service's WebSocket address for an http(s) base URL."""
    scheme, _, rest = base_url.partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest.rstrip('/')}{WS_PATH}"


class SportsSocket:
    """An open socket: `call()` and `subscribe()` correlate answers; iterating yields notifications."""

    def __init__(
        self, connection: ClientConnection, timeout: float, silence_limit: float = SILENCE_LIMIT_SECONDS
    ) -> None:
        self._connection = connection
        self._timeout = timeout
        self._silence_limit = silence_limit
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._notifications: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())
        self.close_code: int | None = None

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request on the socket and return its `result`, or raise its SportsError."""
        request_id = uuid.uuid4().hex
        answer_future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer_future
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        try:
            await self._connection.send(json.dumps(frame))
            answer = await asyncio.wait_for(answer_future, self._timeout)
        except ConnectionClosed:
            raise SportsUnavailable("The service closed the socket.", request_id=request_id) from None
        except TimeoutError:
            raise SportsTimeout("The service did not answer on the socket in time.", request_id=request_id) from None
        finally:
            self._pending.pop(request_id, None)
        if "error" in answer:
            raise api_error(answer, request_id)
        result = answer.get("result")
        if not isinstance(result, dict):
            raise SportsProtocolError("The answer on the socket has no result object.", request_id=request_id)
        return result

    async def subscribe(self, sports: list[str] | None = None) -> str:
        params = {} if sports is None else {"sports": sports}
        result = await self.call("matches.subscribe", params)
        subscription_id: str = result["subscriptionId"]
        return subscription_id

    async def unsubscribe(self, subscription_id: str) -> None:
        await self.call("matches.unsubscribe", {"subscriptionId": subscription_id})

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        while (notification := await self._notifications.get()) is not None:
            yield notification

    async def close(self) -> None:
        await self._connection.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _read(self) -> None:
        try:
            while True:
                try:
                    raw = await asyncio.wait_for(self._connection.recv(), self._silence_limit)
                except TimeoutError:
                    logger.warning(
                        "No frame from the service for %g s; closing the socket as dead", self._silence_limit
                    )
                    await self._connection.close(code=1001, reason="no frame within the silence limit")
                    break
                try:
                    message = json.loads(raw)
                except ValueError:
                    logger.warning("Ignoring a frame from the service that is not JSON")
                    continue
                if not isinstance(message, dict):
                    continue
                future = self._pending.get(message["id"]) if isinstance(message.get("id"), str) else None
                if future is not None and not future.done():
                    future.set_result(message)
                elif message.get("method") == "ping":
                    continue  # liveness only: receiving it was the point
                elif "method" in message and "id" not in message:
                    self._notifications.put_nowait(message)
                elif "error" in message and message.get("id") is None:
                    for waiting in self._pending.values():  # an id-less error answers whatever was asked
                        if not waiting.done():
                            waiting.set_result(message)
        except ConnectionClosed as error:
            logger.debug("socket reader stopped: %s", type(error).__name__)
        finally:
            self.close_code = self._connection.close_code
            self._notifications.put_nowait(None)
            for waiting in self._pending.values():
                if not waiting.done():
                    waiting.set_exception(ConnectionClosed(None, None))


@contextlib.asynccontextmanager
async def open_socket(
    url: str, credential: dict[str, str], timeout: float, silence_limit: float = SILENCE_LIMIT_SECONDS
) -> AsyncIterator[SportsSocket]:
    """Connect, authenticate with the first frame, and close on exit."""
    try:
        connection = await asyncio.wait_for(connect(url, open_timeout=timeout), timeout)
    except TimeoutError:
        raise SportsTimeout("The service's WebSocket did not open in time.") from None
    except (OSError, InvalidHandshake, InvalidURI) as error:
        raise SportsUnavailable(f"Could not open the service's WebSocket ({type(error).__name__}).") from None
    socket = SportsSocket(connection, timeout, silence_limit)
    try:
        await socket.call("auth", credential)
        yield socket
    finally:
        await socket.close()
