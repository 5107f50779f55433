"""AsyncSportsClient: the same surface, awaitable, against a live server and real sockets."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sportsproxy import AsyncSportsClient, SportsTimeout, SportsUnavailable, UnauthorizedError
from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.models import Account
from sportsproxy.sandbox.rpc.transport import SandboxTransport
from sportsproxy.testing import SportsSandbox
from tests.upstreams import closed_port_url, fake_upstream


@pytest.fixture
def live_key(transactional_db: None) -> tuple[Any, str]:
    return issue_key(Account.objects.create(name="async-acme", tier="starter"), "test")


@pytest.mark.asyncio
async def test_mint_list_and_revoke_over_real_http(sports_sandbox: SportsSandbox) -> None:
    secret = sports_sandbox.create_key("async-acme", tier="starter")
    async with AsyncSportsClient(secret, base_url=sports_sandbox.base_url) as sdk:
        token = await sdk.tokens.create(ttl=60)
        page = await sdk.with_token(token.token).matches.list(sports=["esports"], limit=3)
        assert [match["sport"] for match in page.data] == ["esports"] * 3
        sports_sandbox.revoke(secret)
        with pytest.raises(UnauthorizedError):
            await sdk.tokens.create()


@pytest.mark.asyncio
async def test_the_in_process_transport_serves_async_clients(live_key: tuple[Any, str]) -> None:
    _, secret = live_key
    async with AsyncSportsClient(secret, base_url="http://sandbox.invalid", transport=SandboxTransport()) as sdk:
        assert (await sdk.call("auth"))["tier"] == "starter"


@pytest.mark.asyncio
async def test_a_server_that_is_down_raises_unavailable_after_jittered_retries() -> None:
    delays: list[float] = []

    async def record(delay: float) -> None:
        delays.append(delay)

    async with AsyncSportsClient("sk_test_" + "a" * 43, base_url=closed_port_url()) as sdk:
        sdk.random = lambda: 0.5
        sdk.sleep = record
        with pytest.raises(SportsUnavailable):
            await sdk.call("auth")
    assert delays == [0.125, 0.25]


@pytest.mark.serial  # a wall-clock bound: 1 s to spare
@pytest.mark.asyncio
async def test_a_server_that_never_answers_raises_timeout() -> None:
    with fake_upstream(lambda body: None) as url:
        async with AsyncSportsClient("sk_test_" + "a" * 43, base_url=url, timeout=0.5) as sdk:
            started = time.monotonic()
            with pytest.raises(SportsTimeout):
                await sdk.call("auth")
            assert time.monotonic() - started < 1.5
