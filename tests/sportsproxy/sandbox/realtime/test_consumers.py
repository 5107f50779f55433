"""The sandbox's WebSocket endpoint, driven with Channels' WebsocketCommunicator."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from config.asgi import application
from sportsproxy.sandbox import conf
from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.accounts.slots import held
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.matches.book import SPORTS
from sportsproxy.sandbox.models import Account, ApiKey
from sportsproxy.sandbox.realtime import fanout
from sportsproxy.sandbox.realtime.sockets import PING
from tests.support import envelope

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fast_ticks(settings: Any, clock: ManualClock) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 0.01


@pytest.fixture
async def key() -> str:
    account = await sync_to_async(Account.objects.create)(name="ws-acme", tier="free")
    _, secret = await sync_to_async(issue_key)(account, "test")
    return secret


async def mint(secret: str, ttl: int = 60) -> str:
    from sportsproxy import SportsClient
    from sportsproxy.sandbox.rpc.transport import SandboxTransport

    def create() -> str:
        with SportsClient(secret, base_url="http://sandbox.invalid", transport=SandboxTransport()) as client:
            return client.tokens.create(ttl=ttl).token

    return await sync_to_async(create)()


class Socket:
    """A communicator with JSON helpers."""

    def __init__(self, origin: str | None = None) -> None:
        headers = [(b"origin", origin.encode())] if origin else []
        self.communicator = WebsocketCommunicator(application, "/sdk/v1/ws", headers=headers)

    async def open(self) -> Socket:
        connected, _ = await self.communicator.connect()
        assert connected
        return self

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        request = envelope(method, params)
        await self.communicator.send_to(text_data=json.dumps(request))
        answer = await self.receive()
        assert answer.get("id") == request["id"], answer
        return answer

    async def send_raw(self, text: str) -> dict[str, Any]:
        await self.communicator.send_to(text_data=text)
        return await self.receive()

    async def receive(self, timeout: float = 2) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.communicator.receive_from(timeout=timeout))
        return message

    async def closed_with(self, timeout: float = 2) -> int:
        output = await self.communicator.receive_output(timeout=timeout)
        assert output["type"] == "websocket.close", output
        code: int = output.get("code", 1000)
        return code

    async def close(self) -> None:
        await self.communicator.disconnect()


@pytest.fixture
async def sockets() -> AsyncIterator[list[Socket]]:
    opened: list[Socket] = []
    yield opened
    for socket in opened:
        await socket.close()


async def authed(sockets: list[Socket], credential: dict[str, str], origin: str | None = None) -> Socket:
    socket = await Socket(origin).open()
    sockets.append(socket)
    answer = await socket.call("auth", credential)
    assert answer["result"]["ok"] is True, answer
    return socket


async def test_auth_with_an_api_key_then_rpc_calls(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"apiKey": key})
    page = await socket.call("matches.list", {"sports": ["tennis"], "limit": 2})
    assert [match["sport"] for match in page["result"]["data"]] == ["tennis", "tennis"]
    minted = await socket.call("tokens.create", {"ttl": 60})
    assert set(minted["result"]) == {"token", "expiresAt"}


async def test_auth_with_a_token_from_a_browser_origin(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"token": await mint(key)}, origin="https://app.example.com")
    assert (await socket.call("tokens.create"))["error"]["code"] == "forbidden"


async def test_an_api_key_on_a_browser_handshake_is_refused(key: str) -> None:
    socket = await Socket(origin="https://app.example.com").open()
    answer = await socket.call("auth", {"apiKey": key})
    assert answer["error"]["code"] == "unauthorized"
    assert "browser" in answer["error"]["message"]
    assert await socket.closed_with() == 4401


@pytest.mark.parametrize(
    "first_frame",
    [json.dumps(envelope("matches.list", {})), "not json", "[]", json.dumps({"jsonrpc": "2.0", "method": "auth"})],
)
async def test_any_first_frame_but_auth_is_unauthorized_and_closes_4401(first_frame: str) -> None:
    socket = await Socket().open()
    answer = await socket.send_raw(first_frame)
    assert answer["error"]["code"] == "unauthorized"
    assert await socket.closed_with() == 4401


async def test_a_bad_credential_closes_4401(key: str) -> None:
    socket = await Socket().open()
    assert (await socket.call("auth", {"token": "x.y.z"}))["error"]["code"] == "unauthorized"
    assert await socket.closed_with() == 4401


async def test_a_socket_that_never_authenticates_is_closed_after_10_seconds(clock: ManualClock) -> None:
    socket = await Socket().open()
    clock.advance(conf.ws_auth_timeout() - 1)
    assert await socket.communicator.receive_nothing(timeout=0.1)
    clock.advance(1)
    assert (await socket.receive())["error"]["code"] == "unauthorized"
    assert await socket.closed_with() == 4401


async def test_an_expiring_token_gets_auth_expired_then_4401(
    sockets: list[Socket], key: str, clock: ManualClock
) -> None:
    socket = await authed(sockets, {"token": await mint(key, ttl=60)})
    clock.advance(59)
    assert await socket.receive() == PING  # 59 s of silence; nothing else
    assert await socket.communicator.receive_nothing(timeout=0.1)
    clock.advance(1)
    assert await socket.receive() == {"jsonrpc": "2.0", "method": "auth.expired", "params": {}}
    assert await socket.closed_with() == 4401


async def test_a_later_auth_frame_replaces_the_credential(sockets: list[Socket], key: str, clock: ManualClock) -> None:
    socket = await authed(sockets, {"token": await mint(key, ttl=60)})
    clock.advance(50)
    assert await socket.receive() == PING
    fresh = await mint(key, ttl=120)
    answer = await socket.call("auth", {"token": fresh})
    assert answer["result"]["expiresAt"] == "2026-03-14T15:12:16+00:00"
    clock.advance(30)  # past the first token's expiry: a ping for the silence, no auth.expired
    assert await socket.receive() == PING
    assert await socket.communicator.receive_nothing(timeout=0.1)
    assert "result" in await socket.call("matches.list", {"limit": 1})


async def test_a_later_auth_frame_of_another_account_is_refused(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"apiKey": key})
    other_account = await sync_to_async(Account.objects.create)(name="other", tier="free")
    _, other = await sync_to_async(issue_key)(other_account, "test")
    answer = await socket.call("auth", {"apiKey": other})
    assert answer["error"]["code"] == "unauthorized"
    assert "same account" in answer["error"]["message"]
    assert "result" in await socket.call("matches.list", {"limit": 1})


async def test_a_revoked_keys_socket_closes_on_its_next_frame(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"apiKey": key})
    await sync_to_async(lambda: ApiKey.objects.get(secret_hash=hash_secret(key)).revoke())()
    await socket.communicator.send_to(text_data=json.dumps(envelope("matches.list", {})))
    assert (await socket.receive())["error"]["code"] == "unauthorized"
    assert await socket.closed_with() == 4401


async def test_subscribers_receive_events_of_their_sports(sockets: list[Socket], key: str, clock: ManualClock) -> None:
    socket = await authed(sockets, {"apiKey": key})
    subscription = (await socket.call("matches.subscribe", {"sports": ["football"]}))["result"]["subscriptionId"]
    clock.advance(conf.event_interval())
    event = await socket.receive()
    assert event["method"] == "matches.event"
    assert "id" not in event
    assert event["params"]["subscriptionId"] == subscription
    assert event["params"]["kind"] in {"score", "status"}
    assert event["params"]["match"]["sport"] == "football"
    assert event["params"]["match"]["env"] == "test"
    assert (await socket.call("matches.unsubscribe", {"subscriptionId": subscription}))["result"] == {"ok": True}


async def test_unsubscribing_an_unknown_id_is_invalid_params(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"apiKey": key})
    assert (await socket.call("matches.unsubscribe", {"subscriptionId": "sub_nope"}))["error"][
        "code"
    ] == "invalid_params"
    assert (await socket.call("matches.unsubscribe", {}))["error"]["code"] == "invalid_params"
    assert (await socket.call("matches.subscribe", {"sports": ["curling"]}))["error"]["code"] == "invalid_params"


async def test_the_connection_limit_spans_sockets_and_frees_on_close(sockets: list[Socket], key: str) -> None:
    first = await authed(sockets, {"apiKey": key})  # tier free: 2 connections
    await authed(sockets, {"apiKey": key})
    third = await Socket().open()
    answer = await third.call("auth", {"apiKey": key})
    assert answer["error"]["code"] == "rate_limited"
    assert answer["error"]["data"]["limit"] == "connections"
    assert await third.closed_with() == 4429
    await first.close()
    sockets.remove(first)
    await authed(sockets, {"apiKey": key})


async def test_the_subscription_limit_spans_sockets(sockets: list[Socket], key: str) -> None:
    one = await authed(sockets, {"apiKey": key})  # tier free: 5 subscriptions
    two = await authed(sockets, {"apiKey": key})
    for socket in (one, one, one, two, two):
        assert "result" in await socket.call("matches.subscribe", {})
    refused = await two.call("matches.subscribe", {"sports": ["tennis"]})
    assert refused["error"]["code"] == "rate_limited"
    assert refused["error"]["data"]["limit"] == "subscriptions"
    account_id = await sync_to_async(lambda: ApiKey.objects.get(secret_hash=hash_secret(key)).account.public_id)()
    assert await sync_to_async(held)("subscriptions", account_id) == 5
    await one.close()
    sockets.remove(one)
    assert await sync_to_async(held)("subscriptions", account_id) == 2


async def test_bad_frames_get_their_error_and_the_socket_lives_on(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"apiKey": key})
    assert (await socket.send_raw("not json"))["error"]["code"] == "parse_error"
    assert (await socket.send_raw("[1, 2]"))["error"]["code"] == "invalid_request"
    assert (await socket.send_raw('"text"'))["error"]["code"] == "invalid_request"
    oversize = json.dumps(envelope("matches.list", {"cursor": "x" * (64 * 1024)}))
    assert (await socket.send_raw(oversize))["error"]["code"] == "invalid_request"
    assert (await socket.call("nope.method", {}))["error"]["code"] == "method_not_found"
    assert "result" in await socket.call("matches.list", {"limit": 1})


async def test_requests_per_minute_are_shared_with_http(sockets: list[Socket], key: str, settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"free": {"requests_per_minute": 3}}
    await mint(key)  # 1, over HTTP semantics
    socket = await authed(sockets, {"apiKey": key})  # 2
    assert "result" in await socket.call("matches.list", {})  # 3
    limited = await socket.call("matches.list", {})
    assert limited["error"]["code"] == "rate_limited"
    assert limited["error"]["data"]["retryAfter"] >= 1


async def test_a_frame_after_expiry_is_never_served(
    sockets: list[Socket], key: str, clock: ManualClock, settings: Any
) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 60  # no tick in between: the frame itself must see the expiry
    socket = await authed(sockets, {"token": await mint(key, ttl=60)})
    clock.advance(60)
    await socket.communicator.send_to(text_data=json.dumps(envelope("matches.list", {})))
    assert await socket.receive() == {"jsonrpc": "2.0", "method": "auth.expired", "params": {}}
    assert await socket.closed_with() == 4401


async def test_re_auth_into_the_other_environment_moves_the_event_feed(
    sockets: list[Socket], key: str, clock: ManualClock
) -> None:
    socket = await authed(sockets, {"apiKey": key})
    await socket.call("matches.subscribe", {"sports": ["tennis"]})
    account = await sync_to_async(lambda: ApiKey.objects.get(secret_hash=hash_secret(key)).account)()
    _, live_key = await sync_to_async(issue_key)(account, "live")
    assert (await socket.call("auth", {"apiKey": live_key}))["result"]["env"] == "live"
    clock.advance(conf.event_interval())
    event = await socket.receive()
    assert event["params"]["match"]["env"] == "live"


async def test_the_first_auth_frame_with_malformed_params_is_invalid_params_then_4401() -> None:
    socket = await Socket().open()
    assert (await socket.call("auth", {"apiKey": 1}))["error"]["code"] == "invalid_params"
    assert await socket.closed_with() == 4401


async def test_a_spent_quota_at_auth_closes_4429(key: str, settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"free": {"requests_per_minute": 0}}
    socket = await Socket().open()
    assert (await socket.call("auth", {"apiKey": key}))["error"]["code"] == "rate_limited"
    assert await socket.closed_with() == 4429


async def test_limits_apply_to_token_sockets_too(sockets: list[Socket], key: str) -> None:
    token = await mint(key)
    await authed(sockets, {"token": token}, origin="https://app.example.com")
    await authed(sockets, {"token": token}, origin="https://app.example.com")
    third = await Socket(origin="https://app.example.com").open()
    assert (await third.call("auth", {"token": token}))["error"]["data"]["limit"] == "connections"
    assert await third.closed_with() == 4429


async def test_a_non_ascii_frame_is_capped_in_bytes_not_characters(sockets: list[Socket], key: str) -> None:
    socket = await authed(sockets, {"apiKey": key})
    frame = json.dumps(envelope("matches.list", {"cursor": "é" * 40_000}), ensure_ascii=False)
    assert len(frame) < 64 * 1024 < len(frame.encode())
    assert (await socket.send_raw(frame))["error"]["code"] == "invalid_request"


async def test_a_thousand_connect_subscribe_disconnect_cycles_leave_no_slot_or_group_membership(
    key: str, settings: Any
) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"free": {"requests_per_minute": 10**6}}
    layer = get_channel_layer()
    for turn in range(1000):
        socket = await Socket().open()
        assert (await socket.call("auth", {"apiKey": key}))["result"]["ok"] is True
        sports = [SPORTS[turn % len(SPORTS)]] if turn % 2 else None  # one sport, or all of them
        assert "result" in await socket.call("matches.subscribe", {"sports": sports} if sports else {})
        if turn == 0:
            assert fanout.hub().memberships() == {fanout.group_name("test", sport): 1 for sport in SPORTS}
        await socket.close()
    account_id = await sync_to_async(lambda: ApiKey.objects.get(secret_hash=hash_secret(key)).account.public_id)()
    assert await sync_to_async(held)("connections", account_id) == 0
    assert await sync_to_async(held)("subscriptions", account_id) == 0
    assert fanout.hub().memberships() == {}
    assert all(not members for members in layer.groups.values())  # the process channel left every group
