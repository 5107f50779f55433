"""The WebSocket endpoint over a real socket: a live ASGI server and the `websockets` client."""

from __future__ import annotations

import asyncio
import json
from socket import SO_RCVBUF, SOL_SOCKET
from socket import socket as tcp_socket
from typing import Any

import httpx2
import pytest
from asgiref.sync import sync_to_async
from websockets.asyncio.client import ClientConnection, connect
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame
from websockets.uri import parse_uri

from sportsproxy.sandbox import conf
from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.accounts.slots import held
from sportsproxy.sandbox.accounts.tokens import expire_early
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import Account, ApiKey
from sportsproxy.sandbox.realtime import fanout, moments, revocation
from tests.support import envelope

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(asgi_server: str) -> str:
    return asgi_server


@pytest.fixture
def key() -> str:
    return issue_key(Account.objects.create(name="live-ws", tier="free"), "test")[1]


async def call(socket: ClientConnection, method: str, params: Any = None) -> dict[str, Any]:
    """The answer to one request; notifications (events, pings) that come first are skipped."""
    request = envelope(method, params)
    await socket.send(json.dumps(request))
    while "id" not in (answer := json.loads(await socket.recv())):
        pass
    assert answer["id"] == request["id"]
    return answer


async def mint_over_http(server: str, key: str, ttl: int) -> str:
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            f"http://{server}/sdk/v1/rpc",
            json=envelope("tokens.create", {"ttl": ttl}),
            headers={"Authorization": f"Bearer {key}"},
        )
    token: str = response.json()["result"]["token"]
    return token


async def test_token_auth_events_reauth_and_expiry_over_a_real_socket(
    server: str, key: str, clock: ManualClock
) -> None:
    token = await mint_over_http(server, key, ttl=60)
    async with connect(f"ws://{server}/sdk/v1/ws", origin="https://app.example.com") as socket:  # type: ignore[arg-type]
        assert (await call(socket, "auth", {"token": token}))["result"]["tier"] == "free"
        subscription = (await call(socket, "matches.subscribe", {"sports": ["football"]}))["result"]["subscriptionId"]
        clock.advance(conf.event_interval())
        event = json.loads(await socket.recv())
        assert event["method"] == "matches.event"
        assert event["params"]["subscriptionId"] == subscription
        assert event["params"]["match"]["sport"] == "football"

        second = await mint_over_http(server, key, ttl=60)  # minted 3 s later
        assert "result" in await call(socket, "auth", {"token": second})
        clock.advance(60 - conf.event_interval())  # the first token's end: the socket stays open
        assert "result" in await call(socket, "matches.unsubscribe", {"subscriptionId": subscription})
        clock.advance(conf.event_interval())  # the second token's end
        while (notice := json.loads(await socket.recv()))["method"] == "ping":
            pass
        assert notice == {"jsonrpc": "2.0", "method": "auth.expired", "params": {}}
        with pytest.raises(ConnectionClosed) as closed:
            await socket.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 4401


async def test_api_key_auth_and_the_connection_limit_over_a_real_socket(server: str, key: str) -> None:
    url = f"ws://{server}/sdk/v1/ws"
    async with connect(url) as first, connect(url) as second, connect(url) as third:
        assert "result" in await call(first, "auth", {"apiKey": key})
        assert "result" in await call(second, "auth", {"apiKey": key})
        refused = await call(third, "auth", {"apiKey": key})
        assert refused["error"]["code"] == "rate_limited"
        with pytest.raises(ConnectionClosed) as closed:
            await third.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 4429


async def test_the_subscription_limit_over_a_real_socket(server: str, key: str) -> None:
    async with connect(f"ws://{server}/sdk/v1/ws") as socket:
        await call(socket, "auth", {"apiKey": key})
        for _ in range(5):
            assert "result" in await call(socket, "matches.subscribe", {})
        assert (await call(socket, "matches.subscribe", {}))["error"]["data"]["limit"] == "subscriptions"


async def test_a_browser_handshake_with_an_api_key_is_refused(server: str, key: str) -> None:
    async with connect(f"ws://{server}/sdk/v1/ws", origin="https://evil.example") as socket:  # type: ignore[arg-type]
        assert (await call(socket, "auth", {"apiKey": key}))["error"]["code"] == "unauthorized"
        with pytest.raises(ConnectionClosed):
            await socket.recv()


@pytest.mark.parametrize("ping_after", [None, 5], ids=["the service's 25 s", "SPORTS_SANDBOX_WS_PING_AFTER=5"])
async def test_a_socket_sent_nothing_for_25_seconds_gets_a_ping(
    server: str, key: str, clock: ManualClock, settings: Any, ping_after: int | None
) -> None:
    if ping_after is not None:
        settings.SPORTS_SANDBOX_WS_PING_AFTER = ping_after
    silence = ping_after or 25
    async with connect(f"ws://{server}/sdk/v1/ws") as socket:
        await call(socket, "auth", {"apiKey": key})
        clock.advance(silence - 1)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(socket.recv(), 2 * conf.ws_tick())  # a second short of it: nothing yet
        clock.advance(1)
        ping = json.loads(await asyncio.wait_for(socket.recv(), 5))
        assert ping == {"jsonrpc": "2.0", "method": "ping", "params": {}}
        await call(socket, "matches.list", {"limit": 1})  # an answer counts as something sent
        clock.advance(silence - 1)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(socket.recv(), 2 * conf.ws_tick())


async def test_revoking_a_key_closes_its_open_sockets_within_2_s_but_not_its_tokens(server: str, key: str) -> None:
    token = await mint_over_http(server, key, ttl=600)
    async with (
        connect(f"ws://{server}/sdk/v1/ws") as by_key,
        connect(f"ws://{server}/sdk/v1/ws", origin="https://app.example.com") as by_token,  # type: ignore[arg-type]
    ):
        await call(by_key, "auth", {"apiKey": key})
        await call(by_token, "auth", {"token": token})
        loop = asyncio.get_running_loop()
        revoked_at = loop.time()
        await sync_to_async(revoke)(key)

        notice = json.loads(await asyncio.wait_for(by_key.recv(), 5))
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(by_key.recv(), 5)
        assert notice == {"jsonrpc": "2.0", "method": "auth.revoked", "params": {}}
        assert by_key.close_code == 4401
        assert loop.time() - revoked_at < 2
        assert "result" in await call(by_token, "matches.list", {"limit": 1})  # a token outlives its key


def revoke(key: str) -> None:
    ApiKey.objects.get(secret_hash=hash_secret(key)).revoke()


async def test_a_token_ended_early_closes_its_sockets_within_2_s_and_no_other(server: str) -> None:
    """`auth.expired`, then 4401, on every socket that authenticated with the token; a socket of another
    token of the same key, and one of the key itself, stay open."""
    key = await sync_to_async(
        lambda: issue_key(Account.objects.create(name="ended-early", tier="starter"), "test")[1]
    )()
    ended, other = await mint_over_http(server, key, ttl=600), await mint_over_http(server, key, ttl=600)
    url, origin = f"ws://{server}/sdk/v1/ws", "https://app.example.com"
    async with (
        connect(url, origin=origin) as first,  # type: ignore[arg-type]
        connect(url, origin=origin) as second,  # type: ignore[arg-type]
        connect(url, origin=origin) as by_other,  # type: ignore[arg-type]
        connect(url) as by_key,
    ):
        for socket, credential in ((first, ended), (second, ended), (by_other, other)):
            assert "result" in await call(socket, "auth", {"token": credential})
        assert "result" in await call(first, "matches.subscribe", {"sports": ["football"]})
        assert "result" in await call(by_key, "auth", {"apiKey": key})
        loop = asyncio.get_running_loop()
        ended_at = loop.time()
        assert await sync_to_async(expire_early)(ended)

        for socket in (first, second):
            while (notice := json.loads(await asyncio.wait_for(socket.recv(), 5))).get("method") != "auth.expired":
                pass  # an event of the subscription may come first
            assert notice == {"jsonrpc": "2.0", "method": "auth.expired", "params": {}}
            await asyncio.wait_for(socket.wait_closed(), 5)
            assert socket.close_code == 4401
        assert loop.time() - ended_at < 2
        assert "result" in await call(by_other, "matches.list", {"limit": 1})
        assert "result" in await call(by_key, "matches.list", {"limit": 1})


async def test_a_client_that_stops_reading_is_closed_with_4008(server: str, clock: ManualClock, settings: Any) -> None:
    """Its backlog is dropped past 1,000 frames instead of growing; the close comes after what it had read."""
    settings.SPORTS_SANDBOX_WS_TICK = 0.02
    key = await sync_to_async(lambda: issue_key(Account.objects.create(name="slow-reader", tier="growth"), "test")[1])()
    slow = await SlowReader.connect(server)
    try:
        await slow.call("auth", {"apiKey": key})
        for _ in range(50):
            await slow.call("matches.subscribe", {})
        for _ in range(40):  # every sport's events, 50 times over: tens of thousands of frames, none read
            clock.advance(3 * conf.event_interval())
            await asyncio.sleep(0.05)

        received, close_code = await slow.read_until_closed()
    finally:
        slow.connection.close()  # a failure above must not leave it to a later test's ResourceWarning
    assert close_code == 4008
    assert received < 40 * 18 * 50  # the backlog was dropped, not delivered


class SlowReader:
    """A WebSocket client on a raw TCP socket with a tiny receive window, that reads only when told.

    (A library client keeps reading into its own buffers, so the server would never see it stall.)
    """

    def __init__(self, connection: tcp_socket, protocol: ClientProtocol) -> None:
        self.connection = connection
        self.protocol = protocol
        self.loop = asyncio.get_running_loop()
        self.pending: list[object] = []  # events received and not yet handed out

    @classmethod
    async def connect(cls, server: str) -> SlowReader:
        host, port = server.split(":")
        connection = tcp_socket()
        connection.setsockopt(SOL_SOCKET, SO_RCVBUF, 4096)  # before connecting, so the kernel keeps it small
        connection.setblocking(False)
        await asyncio.get_running_loop().sock_connect(connection, (host, int(port)))
        reader = cls(connection, ClientProtocol(parse_uri(f"ws://{server}/sdk/v1/ws")))
        reader.protocol.send_request(reader.protocol.connect())
        await reader.flush()
        await reader.next_event()  # the handshake's response
        return reader

    async def flush(self) -> None:
        await self.loop.sock_sendall(self.connection, b"".join(self.protocol.data_to_send()))

    async def next_event(self) -> object:
        while not self.pending:
            data = await asyncio.wait_for(self.loop.sock_recv(self.connection, 65536), 10)
            if not data:
                self.protocol.receive_eof()
                raise ConnectionError("closed")
            self.protocol.receive_data(data)
            self.pending.extend(self.protocol.events_received())
        return self.pending.pop(0)

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        request = envelope(method, params)
        self.protocol.send_text(json.dumps(request).encode())
        await self.flush()
        while True:  # the events of subscriptions made before may come first (a slow run)
            frame = await self.next_event()
            answer: dict[str, Any] = json.loads(frame.data)  # type: ignore[attr-defined]
            if answer.get("id") == request["id"]:
                break
        assert "result" in answer, answer
        return answer

    async def read_until_closed(self) -> tuple[int, int | None]:
        received = len(self.pending)
        try:
            while True:
                data = await asyncio.wait_for(self.loop.sock_recv(self.connection, 1 << 20), 10)
                if not data:
                    break
                self.protocol.receive_data(data)
                received += sum(1 for event in self.protocol.events_received() if isinstance(event, Frame))
                await self.flush()  # answers the close handshake
                if self.protocol.close_rcvd is not None:
                    break
        finally:
            self.connection.close()
        return received, self.protocol.close_rcvd.code if self.protocol.close_rcvd else None


async def test_a_thousand_connect_subscribe_disconnect_cycles_leave_nothing_held(server: str) -> None:
    """Every socket's slot, subscription, hub membership, timer and revocation watch goes with it."""
    business = await sync_to_async(Account.objects.create)(name="cycles", tier="business")  # 2,000 frames a minute
    key = (await sync_to_async(issue_key)(business, "test"))[1]
    account = business.public_id
    for cycle in range(1_000):
        async with connect(f"ws://{server}/sdk/v1/ws") as socket:
            assert "result" in await call(socket, "auth", {"apiKey": key})
            params = {"sports": ["football"]} if cycle % 2 else {}  # one group, or every sport's
            assert "result" in await call(socket, "matches.subscribe", params)

    async def settled() -> None:
        while fanout.memberships() or moments.planned() or revocation.watched():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(settled(), 10)
    assert await sync_to_async(held)("connections", account) == 0
    assert await sync_to_async(held)("subscriptions", account) == 0
