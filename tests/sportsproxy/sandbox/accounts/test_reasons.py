"""`error.data.reason` on every `unauthorized`, over HTTP and on the socket, and the SDK's `.reason`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sportsproxy import SportsClient, UnauthorizedError
from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import Account, ApiKey
from sportsproxy.sandbox.realtime.sockets import CLOSE_UNAUTHORIZED, SocketSession
from sportsproxy.sandbox.rpc.transport import SandboxTransport
from tests.conftest import RpcCall
from tests.support import envelope, post_rpc

UNKNOWN_KEY = "sk_test_" + "u" * 40


def reason_of(answer: dict[str, Any]) -> str:
    assert answer["error"]["code"] == "unauthorized", answer
    reason: str = answer["error"]["data"]["reason"]
    return reason


def test_every_reason_over_http(rpc: RpcCall, api_key: str, clock: ManualClock) -> None:
    token = rpc("tokens.create", {"ttl": 60}, credential=api_key)["result"]["token"]
    assert reason_of(post_rpc(json.dumps(envelope("matches.list")))) == "missing_credential"
    assert reason_of(rpc("matches.list", {}, credential="sk_test_short")) == "malformed_credential"
    assert reason_of(rpc("matches.list", {}, credential=UNKNOWN_KEY)) == "unknown_key"
    assert reason_of(rpc("matches.list", {}, credential=token[:-4] + "AAAA")) == "invalid_token"
    browser_call = rpc("matches.list", {}, credential=api_key, HTTP_ORIGIN="https://app.test")
    assert reason_of(browser_call) == "key_from_browser"
    ApiKey.objects.get(secret_hash=hash_secret(api_key)).revoke()
    assert reason_of(rpc("matches.list", {}, credential=api_key)) == "revoked_key"
    clock.advance(60)
    assert reason_of(rpc("matches.list", {}, credential=token)) == "expired_token"


def test_a_malformed_authorization_header_is_malformed_credential(rpc: RpcCall) -> None:
    answer = post_rpc(json.dumps(envelope("matches.list")), HTTP_AUTHORIZATION="Basic abc")
    assert reason_of(answer) == "malformed_credential"


@pytest.mark.parametrize("credential", ["abc", "a.b", "a.b.c.d", "x" * 300, "...."])
def test_a_bearer_value_neither_key_nor_three_segments_is_malformed_credential(rpc: RpcCall, credential: str) -> None:
    assert reason_of(rpc("matches.list", {}, credential=credential)) == "malformed_credential"


def test_three_segments_that_do_not_verify_stay_invalid_token(rpc: RpcCall) -> None:
    assert reason_of(rpc("matches.list", {}, credential="a.b.c")) == "invalid_token"


def frames(session: SocketSession, *sent: dict[str, Any]) -> list[tuple[dict[str, Any], int | None]]:
    return [session.handle_frame(json.dumps(frame)) for frame in sent]


def test_a_socket_frame_before_auth_is_auth_required() -> None:
    [(answer, close_code)] = frames(SocketSession(from_browser=False), envelope("matches.list"))
    assert reason_of(answer) == "auth_required"
    assert close_code == CLOSE_UNAUTHORIZED


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"apiKey": UNKNOWN_KEY}, "unknown_key"),
        ({"apiKey": "sk_live_short"}, "malformed_credential"),
        ({"token": "not.a.jwt"}, "invalid_token"),
        ({"token": "abc"}, "malformed_credential"),
        ({"token": "a.b"}, "malformed_credential"),
    ],
)
def test_a_refused_auth_frame_carries_its_reason(params: dict[str, str], reason: str) -> None:
    [(answer, close_code)] = frames(SocketSession(from_browser=False), envelope("auth", params))
    assert reason_of(answer) == reason
    assert close_code == CLOSE_UNAUTHORIZED


def test_an_api_key_on_a_browser_socket_is_key_from_browser(api_key: str) -> None:
    [(answer, _)] = frames(SocketSession(from_browser=True), envelope("auth", {"apiKey": api_key}))
    assert reason_of(answer) == "key_from_browser"


def test_a_later_auth_of_another_account_is_invalid_token(rpc: RpcCall, api_key: str) -> None:
    other_key = issue_key(Account.objects.create(name="other", tier="free"), "test")[1]
    session = SocketSession(from_browser=False)
    (_, _), (answer, _) = frames(
        session, envelope("auth", {"apiKey": api_key}), envelope("auth", {"apiKey": other_key})
    )
    assert reason_of(answer) == "invalid_token"


def test_a_revoked_key_socket_is_told_revoked_key(api_key: str) -> None:
    session = SocketSession(from_browser=False)
    frames(session, envelope("auth", {"apiKey": api_key}))
    ApiKey.objects.get(secret_hash=hash_secret(api_key)).revoke()
    [(answer, close_code)] = frames(session, envelope("matches.list"))
    assert reason_of(answer) == "revoked_key"
    assert close_code == CLOSE_UNAUTHORIZED


def test_the_sdk_exposes_the_reason() -> None:
    with SportsClient(UNKNOWN_KEY, base_url="http://sandbox.invalid", transport=SandboxTransport()) as client:
        with pytest.raises(UnauthorizedError) as refused:
            client.matches.list()
    assert refused.value.reason == "unknown_key"
    assert UnauthorizedError("No.", code="unauthorized").reason is None
