"""The server SDK against the real sandbox (in-process and over a live server) and real misbehaving sockets."""

from __future__ import annotations

import json
import logging
import ssl
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from sportsproxy import (
    AsyncSportsClient,
    ForbiddenError,
    InvalidParamsError,
    MatchPage,
    RateLimitedError,
    SportsAPIError,
    SportsClient,
    SportsProtocolError,
    SportsTimeout,
    SportsUnavailable,
    TokenResponse,
    UnauthorizedError,
)
from sportsproxy.client import shared_tls_context
from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import ApiKey
from sportsproxy.sandbox.rpc.transport import SandboxTransport
from sportsproxy.service import RETRY_MAX_DELAY
from tests.upstreams import closed_port_url, fake_upstream, http_response


@pytest.fixture
def client(api_key: str) -> Iterator[SportsClient]:
    with SportsClient(api_key, base_url="http://sandbox.invalid", transport=SandboxTransport()) as sdk:
        yield sdk


def revoke(secret: str) -> None:
    ApiKey.objects.get(secret_hash=hash_secret(secret)).revoke()


def envelope_reply(**fields: Any) -> bytes:
    return http_response(json.dumps({"jsonrpc": "2.0", **fields}).encode())


def test_tokens_create_returns_a_token_response(client: SportsClient, clock: ManualClock) -> None:
    token = client.tokens.create(ttl=300)
    assert isinstance(token, TokenResponse)
    assert token.expires_at == datetime.fromisoformat("2026-03-14T15:14:26+00:00")
    assert token.as_json() == {"token": token.token, "expiresAt": "2026-03-14T15:14:26+00:00"}
    assert token.token not in repr(token)


def test_matches_list_pages_through_every_record(client: SportsClient) -> None:
    seen: list[str] = []
    page = client.matches.list(sports=["tennis"], limit=7)
    while True:
        assert isinstance(page, MatchPage)
        seen.extend(match["id"] for match in page.data)
        if page.next_cursor is None:
            break
        page = client.matches.list(sports=["tennis"], limit=7, cursor=page.next_cursor)
    assert len(seen) == len(set(seen)) == page.total == 24


def test_call_reaches_any_method(client: SportsClient) -> None:
    assert client.call("auth", {})["ok"] is True


def test_a_token_client_lists_matches_but_cannot_mint(client: SportsClient) -> None:
    as_browser = client.with_token(client.tokens.create().token)
    assert as_browser.matches.list(limit=1).data
    with pytest.raises(ForbiddenError) as raised:
        as_browser.tokens.create()
    assert raised.value.code == "forbidden"


def test_a_revoked_key_raises_unauthorized_while_its_token_works(client: SportsClient, api_key: str) -> None:
    token = client.tokens.create().token
    revoke(api_key)
    with pytest.raises(UnauthorizedError) as raised:
        client.tokens.create()
    assert raised.value.code == "unauthorized"
    assert "revoked" in raised.value.message
    assert raised.value.request_id
    assert client.with_token(token).matches.list(limit=1).data


def test_an_expired_token_raises_unauthorized(client: SportsClient, clock: ManualClock) -> None:
    as_browser = client.with_token(client.tokens.create(ttl=60).token)
    clock.advance(60)
    with pytest.raises(UnauthorizedError, match="expired"):
        as_browser.matches.list()


def test_a_tampered_token_raises_unauthorized(client: SportsClient) -> None:
    header, payload, signature = client.tokens.create().token.split(".")
    with pytest.raises(UnauthorizedError):
        client.with_token(f"{header}.{payload}.{signature[::-1]}").matches.list()


@pytest.mark.parametrize("ttl", [59, 86401, 0, -1, True, 600.5, "600", None])
def test_a_bad_ttl_is_refused_before_the_wire(ttl: Any, api_key: str) -> None:
    requests: list[bytes] = []
    with fake_upstream(lambda body: requests.append(body) or envelope_reply(id="x", result={})) as url:
        with SportsClient(api_key, base_url=url) as sdk, pytest.raises(ValueError, match="60 to 86400"):
            sdk.tokens.create(ttl=ttl)
    assert requests == []


def test_a_bad_param_on_the_wire_raises_invalid_params(client: SportsClient) -> None:
    with pytest.raises(InvalidParamsError, match="60 to 86400"):
        client.call("tokens.create", {"ttl": 5})


def test_a_spent_quota_raises_rate_limited_with_retry_after(client: SportsClient, settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"starter": {"requests_per_minute": 1}}
    client.call("auth")
    with pytest.raises(RateLimitedError) as raised:
        client.call("auth")
    assert raised.value.retry_after is not None
    assert 1 <= raised.value.retry_after <= 60


def test_a_server_that_is_down_raises_unavailable_after_the_retries(api_key: str) -> None:
    delays: list[float] = []
    with SportsClient(api_key, base_url=closed_port_url(), max_retries=2) as sdk:
        sdk.random = lambda: 1.0
        sdk.sleep = delays.append
        with pytest.raises(SportsUnavailable):
            sdk.tokens.create()
    assert delays == [0.25, 0.5]


def test_retries_stop_at_zero_when_asked(api_key: str) -> None:
    delays: list[float] = []
    with SportsClient(api_key, base_url=closed_port_url(), max_retries=0) as sdk:
        sdk.sleep = delays.append
        with pytest.raises(SportsUnavailable):
            sdk.call("auth")
    assert delays == []


def test_backoff_is_full_jitter_and_capped(api_key: str) -> None:
    sdk = SportsClient(api_key, base_url="http://127.0.0.1:9")
    sdk.random = lambda: 1.0
    assert [sdk.retry_delay(attempt) for attempt in (1, 2, 3, 4, 5, 6, 30)] == [0.25, 0.5, 1, 2, 4, 4, RETRY_MAX_DELAY]
    sdk.random = lambda: 0.0
    assert sdk.retry_delay(3) == 0
    sdk.close()


@pytest.mark.serial  # a wall-clock bound: 1 s to spare
def test_a_server_that_never_answers_raises_timeout_within_the_timeout_plus_one_second(api_key: str) -> None:
    connections: list[bytes] = []
    with fake_upstream(lambda body: connections.append(body)) as url:
        with SportsClient(api_key, base_url=url, timeout=0.5) as sdk:
            started = time.monotonic()
            with pytest.raises(SportsTimeout):
                sdk.tokens.create()
            assert time.monotonic() - started < 1.5
    assert len(connections) == 1  # a read timeout is not retried: the service may have acted


@pytest.mark.parametrize(
    "reply",
    [
        http_response(b"<html>Bad gateway</html>", content_type="text/html"),
        http_response(b"<html>oops</html>", status="502 Bad Gateway", content_type="text/html"),
        http_response(b'{"jsonrpc": "2.0", "id": "somebody-else", "result": {}}'),
        http_response(b'{"jsonrpc": "2.0", "result": {"token": "x"'),
        http_response(b'{"jsonrpc": "1.0", "id": null, "result": {}}'),
        http_response(b'{"jsonrpc": "2.0", "id": null, "error": "no"}'),
        http_response(b"[]"),
    ],
    ids=["html", "502", "wrong-id", "truncated", "not-2.0", "error-not-object", "array"],
)
def test_an_answer_that_is_not_an_envelope_for_this_request_raises_protocol_error(reply: bytes, api_key: str) -> None:
    with fake_upstream(lambda body: reply) as url, SportsClient(api_key, base_url=url) as sdk:
        with pytest.raises(SportsProtocolError):
            sdk.call("auth")


def test_a_result_of_the_wrong_shape_raises_protocol_error(api_key: str) -> None:
    def reply(body: bytes) -> bytes:
        return envelope_reply(id=json.loads(body)["id"], result={"token": 1})

    with fake_upstream(reply) as url, SportsClient(api_key, base_url=url) as sdk:
        with pytest.raises(SportsProtocolError, match="shape"):
            sdk.tokens.create()


@pytest.mark.parametrize("expires_at", ["2026-03-14T15:14:26", "2026-03-14", "soon"])
def test_an_expiry_without_a_utc_offset_raises_protocol_error(api_key: str, expires_at: str) -> None:
    # A time without an offset cannot be compared with now: the token's life is unknown.
    def reply(body: bytes) -> bytes:
        return envelope_reply(id=json.loads(body)["id"], result={"token": "a.b.c", "expiresAt": expires_at})

    with fake_upstream(reply) as url, SportsClient(api_key, base_url=url) as sdk:
        with pytest.raises(SportsProtocolError, match="shape"):
            sdk.tokens.create()


def test_answered_errors_are_never_retried(api_key: str) -> None:
    requests: list[bytes] = []

    def reply(body: bytes) -> bytes:
        requests.append(body)
        return envelope_reply(id=json.loads(body)["id"], error={"code": "unauthorized", "message": "no"})

    with fake_upstream(reply) as url, SportsClient(api_key, base_url=url) as sdk:
        with pytest.raises(UnauthorizedError):
            sdk.call("auth")
    assert len(requests) == 1


def test_an_unknown_error_code_raises_the_base_api_error(api_key: str) -> None:
    def reply(body: bytes) -> bytes:
        return envelope_reply(id=json.loads(body)["id"], error={"code": "teapot", "message": "short and stout"})

    with fake_upstream(reply) as url, SportsClient(api_key, base_url=url) as sdk:
        with pytest.raises(SportsAPIError) as raised:
            sdk.call("auth")
    assert type(raised.value) is SportsAPIError
    assert raised.value.code == "teapot"


def test_requests_carry_a_string_id_bearer_auth_and_json(api_key: str) -> None:
    seen: list[dict[str, Any]] = []

    def reply(body: bytes) -> bytes:
        seen.append(json.loads(body))
        return envelope_reply(id=seen[-1]["id"], result={"ok": True})

    with fake_upstream(reply) as url, SportsClient(api_key, base_url=url) as sdk:
        sdk.call("matches.list", {"limit": 2})
    assert isinstance(seen[0]["id"], str)
    assert seen[0] == {"jsonrpc": "2.0", "id": seen[0]["id"], "method": "matches.list", "params": {"limit": 2}}


@pytest.mark.parametrize("bad_key", ["pk_live_" + "a" * 40, "sk_live_short", "sk_prod_" + "a" * 40])
def test_a_malformed_key_is_refused_without_quoting_it(bad_key: str) -> None:
    with pytest.raises(ValueError, match="sk_live_ or sk_test_") as raised:
        SportsClient(bad_key, base_url="http://127.0.0.1:9")
    assert bad_key not in str(raised.value)


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPORTS_API_KEY", raising=False)
    with pytest.raises(ValueError, match="SPORTS_API_KEY"):
        SportsClient(base_url="http://127.0.0.1:9")


def test_key_and_base_url_can_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    monkeypatch.setenv("SPORTS_API_KEY", api_key)
    monkeypatch.setenv("SPORTS_BASE_URL", "http://sandbox.invalid/")
    with SportsClient(transport=SandboxTransport()) as sdk:
        assert sdk.base_url == "http://sandbox.invalid"
        assert sdk.call("auth")["env"] == "test"


def test_no_error_repr_or_log_line_contains_the_key(
    api_key: str, client: SportsClient, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    caught: list[Exception] = []
    with caplog.at_level(logging.DEBUG):
        for scenario in (
            lambda: client.call("tokens.create", {"ttl": 1}),
            lambda: client.call("nope"),
            lambda: SportsClient(api_key, base_url=closed_port_url(), max_retries=1).call("auth"),
            lambda: (revoke(api_key), client.call("auth")),
        ):
            try:
                scenario()
            except Exception as error:  # collects every failure to scan its text
                caught.append(error)
    assert len(caught) == 4
    texts = [caplog.text, repr(client)] + [f"{error!s} {error!r} {error.args!r}" for error in caught]
    assert "retrying auth" in caplog.text
    for text in texts:
        assert api_key not in text
        assert api_key[8:] not in text


def test_over_real_http_against_a_live_server(live_server: Any, transactional_db: None) -> None:
    from sportsproxy.sandbox.accounts.keys import issue_key
    from sportsproxy.sandbox.models import Account

    key, secret = issue_key(Account.objects.create(name="http-acme", tier="starter"), "live")
    with SportsClient(secret, base_url=live_server.url) as sdk:
        token = sdk.tokens.create(ttl=120)
        as_browser = sdk.with_token(token.token)
        assert {match["env"] for match in as_browser.matches.list(limit=5).data} == {"live"}
        key.revoke()
        with pytest.raises(UnauthorizedError):
            sdk.tokens.create()
        assert as_browser.matches.list(limit=1).data


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/sdk/v1/rpc", "https://api.example.com?x", "api.example.com"])
def test_a_base_url_with_a_path_is_refused_with_a_sentence(api_key: str, url: str) -> None:
    with pytest.raises(ValueError, match="origin"):
        SportsClient(api_key, base_url=url)


class HttpxStyleTransport:
    """What an integrator's transport written for httpx looks like to httpx2: the method, not the base class."""

    def handle_request(self, request: object) -> object:
        raise AssertionError("never called: the client refuses the transport first")

    async def handle_async_request(self, request: object) -> object:
        raise AssertionError("never called: the client refuses the transport first")


@pytest.mark.parametrize("client_class", [SportsClient, AsyncSportsClient])
def test_a_transport_that_is_not_httpx2s_is_refused_with_the_fix(client_class: type) -> None:
    with pytest.raises(TypeError, match=r"import httpx2 in place of httpx") as refused:
        client_class("sk_test_" + "k" * 43, base_url="https://sports.example", transport=HttpxStyleTransport())
    assert "HttpxStyleTransport" in str(refused.value)


async def test_every_client_of_the_process_verifies_with_one_tls_context() -> None:
    # Each context loads the system's certificates (about 10 ms of CPU): built once, shared by every client.
    key, url = "sk_test_" + "k" * 43, "https://sports.example"
    with SportsClient(key, base_url=url) as first, SportsClient(key, base_url=url) as second:
        async with AsyncSportsClient(key, base_url=url) as third:
            pools = [client._http._transport._pool for client in (first, second, third)]  # type: ignore[attr-defined]
            assert {id(pool._ssl_context) for pool in pools} == {id(shared_tls_context())}
    assert shared_tls_context().verify_mode == ssl.CERT_REQUIRED
    assert shared_tls_context().check_hostname
