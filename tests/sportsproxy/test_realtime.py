"""The server SDK's WebSocket against the sandbox served on a real socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from sportsproxy import AsyncSportsClient, InvalidParamsError, SportsUnavailable, UnauthorizedError
from sportsproxy.realtime import open_socket, websocket_url
from sportsproxy.sandbox import conf
from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import Account
from sportsproxy.sandbox.realtime import revocation
from tests.upstreams import closed_port_url


@pytest.fixture
def key(transactional_db: None) -> tuple[Any, str]:
    return issue_key(Account.objects.create(name="sdk-ws", tier="starter"), "test")


def test_websocket_urls_follow_the_base_url() -> None:
    assert websocket_url("http://127.0.0.1:8000") == "ws://127.0.0.1:8000/sdk/v1/ws"
    assert websocket_url("https://api.example.com/") == "wss://api.example.com/sdk/v1/ws"


async def test_connect_subscribe_and_receive_events(asgi_server: str, key: tuple[Any, str], clock: ManualClock) -> None:
    async with AsyncSportsClient(key[1], base_url=f"http://{asgi_server}") as client, client.connect() as socket:
        subscription_id = await socket.subscribe(sports=["basketball"])
        clock.advance(conf.event_interval())
        notification = await asyncio.wait_for(anext(aiter(socket)), 5)
        assert notification["method"] == "matches.event"
        assert notification["params"]["subscriptionId"] == subscription_id
        assert notification["params"]["match"]["sport"] == "basketball"
        await socket.unsubscribe(subscription_id)
        with pytest.raises(InvalidParamsError):
            await socket.unsubscribe(subscription_id)
        assert (await socket.call("matches.list", {"limit": 1}))["pagination"]["limit"] == 1


async def test_a_revoked_key_cannot_connect(asgi_server: str, key: tuple[Any, str]) -> None:
    await sync_to_async(key[0].revoke)()
    async with AsyncSportsClient(key[1], base_url=f"http://{asgi_server}") as client:
        with pytest.raises(UnauthorizedError, match="revoked"):
            async with client.connect():
                pass


async def test_a_token_client_connects_with_the_token(asgi_server: str, key: tuple[Any, str]) -> None:
    async with AsyncSportsClient(key[1], base_url=f"http://{asgi_server}") as client:
        token = (await client.tokens.create(ttl=60)).token
        async with client.with_token(token).connect() as socket:
            assert await socket.subscribe() is not None


async def test_a_socket_closed_by_the_service_ends_iteration_and_fails_calls(
    asgi_server: str, key: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The call below finds the key revoked and is answered so, then the socket closed. The revocation watcher
    # (once a second, real time) would otherwise close it on its own whenever it looks, before the call on a
    # slow run: that path is the sandbox's (tests/sportsproxy/sandbox/realtime/test_ws_live.py).
    monkeypatch.setattr(revocation, "revoked_among", lambda key_ids: [])
    async with AsyncSportsClient(key[1], base_url=f"http://{asgi_server}") as client, client.connect() as socket:
        await sync_to_async(key[0].revoke)()
        with pytest.raises(UnauthorizedError):
            await socket.call("matches.list", {})
        assert [notification async for notification in socket] == []
        assert socket.close_code == 4401
        with pytest.raises(SportsUnavailable):
            await socket.call("matches.list", {})


async def test_no_service_is_unavailable() -> None:
    async with AsyncSportsClient("sk_test_" + "a" * 43, base_url=closed_port_url(), timeout=2) as client:
        with pytest.raises(SportsUnavailable):
            async with client.connect():
                pass


async def service_that_answers_auth(pinging_every: float | None) -> tuple[Any, str]:
    """A tiny real WebSocket server: answers `auth`, then sends only pings (or nothing at all)."""
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(connection: ServerConnection) -> None:
        request = json.loads(await connection.recv())
        await connection.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": True}}))
        while pinging_every is not None:
            await asyncio.sleep(pinging_every)
            await connection.send(json.dumps({"jsonrpc": "2.0", "method": "ping", "params": {}}))
        await connection.wait_closed()

    server = await serve(handler, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    return server, f"ws://{host}:{port}/sdk/v1/ws"


async def test_a_socket_silent_past_the_limit_is_closed_as_dead() -> None:
    server, url = await service_that_answers_auth(pinging_every=None)
    async with server, open_socket(url, {"apiKey": "sk_test_x"}, timeout=2, silence_limit=0.3) as socket:
        notifications = await asyncio.wait_for(collect(socket), 5)
        assert notifications == []
        assert socket.close_code == 1001


@pytest.mark.serial  # wall-clock: pings every 0.1 s against a 0.3 s silence limit
async def test_pings_keep_a_quiet_socket_alive_and_are_not_yielded() -> None:
    server, url = await service_that_answers_auth(pinging_every=0.1)
    async with server, open_socket(url, {"apiKey": "sk_test_x"}, timeout=2, silence_limit=0.3) as socket:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(aiter(socket)), 1.2)  # four silence limits: still open, nothing yielded
        assert socket.close_code is None


async def collect(socket: Any) -> list[dict[str, Any]]:
    return [notification async for notification in socket]
