"""Property-based fuzzing of /sdk/v1/rpc over HTTP and of WebSocket frames.

Invariants: never a 500 and never a traceback; every HTTP answer is status 200 with a valid
envelope whose error code is one of the contract's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sportsproxy.sandbox.realtime.sockets import SocketSession
from tests.fuzz.strategies import deep_nesting, envelopes, json_values

CODES = {
    "parse_error",
    "invalid_request",
    "method_not_found",
    "invalid_params",
    "unauthorized",
    "forbidden",
    "rate_limited",
    "internal_error",
}
FUZZ = settings(
    max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.fixture(autouse=True)
def _unlimited(settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"starter": {"requests_per_minute": 10**9, "subscriptions": 10**6}}


def assert_valid_envelope(answer: dict[str, Any]) -> None:
    assert answer["jsonrpc"] == "2.0"
    assert ("result" in answer) != ("error" in answer)
    assert answer["id"] is None or isinstance(answer["id"], str)
    if "error" in answer:
        assert answer["error"]["code"] in CODES
        assert isinstance(answer["error"]["message"], str)
        assert "Traceback" not in answer["error"]["message"]
    assert "Traceback" not in json.dumps(answer)


@FUZZ
@given(
    body=st.one_of(
        envelopes().map(json.dumps), json_values.map(json.dumps), st.binary(max_size=200), st.text(max_size=200)
    )
)
@example(body=deep_nesting(20_000))
@example(body=json.dumps({"jsonrpc": "2.0", "id": "x", "method": "matches.list", "params": {"limit": 10**400}}))
@example(body="x" * (70 * 1024))
def test_any_http_body_gets_a_valid_envelope_with_status_200(body: str | bytes, api_key: str) -> None:
    response = Client().post(
        "/sdk/v1/rpc", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api_key}"
    )
    assert response.status_code == 200
    assert_valid_envelope(json.loads(response.content))


@FUZZ
@given(frame=st.one_of(envelopes().map(json.dumps), json_values.map(json.dumps), st.text(max_size=200)))
def test_any_frame_on_an_authenticated_socket_gets_a_valid_answer(frame: str, api_key: str) -> None:
    session = SocketSession(from_browser=False)
    answer, close_code = session.handle_frame(
        json.dumps({"jsonrpc": "2.0", "id": "a", "method": "auth", "params": {"apiKey": api_key}})
    )
    assert close_code is None
    answer, close_code = session.handle_frame(frame)
    assert close_code is None or close_code == 4401
    if "method" in answer and "id" not in answer:
        assert answer["method"] == "auth.expired"
    else:
        assert_valid_envelope(answer)
    session.close()


@FUZZ
@given(frame=st.one_of(envelopes().map(json.dumps), json_values.map(json.dumps), st.text(max_size=200)))
def test_any_first_frame_gets_a_valid_answer_and_a_close_unless_it_authenticates(frame: str) -> None:
    session = SocketSession(from_browser=True)
    answer, close_code = session.handle_frame(frame)
    assert_valid_envelope(answer)
    assert ("result" in answer) == (close_code is None)
    assert close_code in (None, 4401, 4429)
    session.close()
