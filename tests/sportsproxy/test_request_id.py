"""The request id the SDK sends (`X-Request-ID`) and writes on log lines: its shape, its scope per thread and
task, and the header a real socket receives from the sync and the async client."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from sportsproxy import AsyncSportsClient, SportsClient
from sportsproxy.request_id import (
    MAX_REQUEST_ID_LENGTH,
    RequestIdFilter,
    current_request_id,
    is_valid_request_id,
    use_request_id,
)
from tests.upstreams import fake_upstream, http_response

KEY = "sk_test_" + "a" * 32


def token_reply(body: bytes) -> bytes:
    call = json.loads(body)
    result = {"token": "a.b.c", "expiresAt": "2026-03-14T15:14:26+00:00"}
    return http_response(json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result}).encode())


@pytest.fixture
def service() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A real socket answering tokens.create, and the headers of every request it received."""
    heads: list[dict[str, str]] = []
    with fake_upstream(token_reply, heads=heads) as url:
        yield url, heads


@pytest.mark.parametrize(
    "value",
    ["3f2a9c0e5d41", "0f0e5f5e-8a4c-4e2b-9a57-5b1d1d0c7a11", "Root=1-67891233-abcdef012345678912345678", "a" * 128],
)
def test_ids_of_uuids_proxies_and_load_balancers_are_valid(value: str) -> None:
    assert is_valid_request_id(value)


@pytest.mark.parametrize(
    "value",
    ["", "a" * (MAX_REQUEST_ID_LENGTH + 1), "a b", "a\r\nX-Forged: 1", "id\n2026 INFO forged line", 'a"b', "é", "a;b"],
)
def test_anything_else_is_not_an_id(value: str) -> None:
    assert not is_valid_request_id(value)
    with pytest.raises(ValueError, match="1 to 128 letters, digits or"):
        with use_request_id(value):
            pass


def test_an_id_holds_for_its_block_and_the_previous_one_comes_back() -> None:
    assert current_request_id() is None
    with use_request_id("outer"):
        with use_request_id("inner"):
            assert current_request_id() == "inner"
        assert current_request_id() == "outer"
    assert current_request_id() is None


def test_another_thread_does_not_see_this_threads_id() -> None:
    seen: list[str | None] = []
    with use_request_id("mine"):
        thread = threading.Thread(target=lambda: seen.append(current_request_id()))
        thread.start()
        thread.join(timeout=5)
    assert seen == [None]


async def test_concurrent_tasks_keep_their_own_ids() -> None:
    async def served(request_id: str) -> str | None:
        with use_request_id(request_id):
            await asyncio.sleep(0)  # the other task runs in between
            return current_request_id()

    assert await asyncio.gather(served("first"), served("second")) == ["first", "second"]


def filtered(record: logging.LogRecord) -> str:
    assert RequestIdFilter().filter(record) is True
    request_id: str = record.request_id  # type: ignore[attr-defined]
    return request_id


def test_the_filter_writes_the_current_id_else_the_records_requests_else_a_dash() -> None:
    assert filtered(logging.makeLogRecord({})) == "-"
    named = SimpleNamespace(request_id="of-the-request")
    assert filtered(logging.makeLogRecord({"request": named})) == "of-the-request"
    assert filtered(logging.makeLogRecord({"request": SimpleNamespace()})) == "-"  # a server's socket, say
    with use_request_id("current"):
        assert filtered(logging.makeLogRecord({})) == "current"


def test_the_client_sends_the_id_of_its_block_and_none_outside(service: tuple[str, list[dict[str, str]]]) -> None:
    url, heads = service
    with SportsClient(KEY, base_url=url) as client:
        with use_request_id("3f2a9c0e5d41"):
            client.tokens.create(ttl=600)
        client.tokens.create(ttl=600)
    assert [head.get("x-request-id") for head in heads] == ["3f2a9c0e5d41", None]


async def test_the_async_client_sends_each_tasks_own_id(service: tuple[str, list[dict[str, str]]]) -> None:
    url, heads = service

    async def mint(client: AsyncSportsClient, request_id: str) -> None:
        with use_request_id(request_id):
            await client.tokens.create(ttl=600)

    async with AsyncSportsClient(KEY, base_url=url) as client:
        await asyncio.gather(mint(client, "first"), mint(client, "second"))
    assert sorted(head["x-request-id"] for head in heads) == ["first", "second"]
