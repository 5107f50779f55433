"""The JSON-RPC envelope over the real endpoint: every malformed request by category."""

from __future__ import annotations

import json

import pytest

from sportsproxy.sandbox.conf import MAX_BODY_BYTES
from tests.support import envelope, error_code, post_rpc


@pytest.mark.parametrize("body", [b"", b"{", b"not json", b"\xff\xfe\x00", b'{"jsonrpc": NaN}', b"[" * 60_000])
def test_a_body_that_is_not_json_is_a_parse_error_with_null_id(body: bytes, api_key: str) -> None:
    answer = post_rpc(body, api_key)
    assert error_code(answer) == "parse_error"
    assert answer["id"] is None


@pytest.mark.parametrize("body", ["1", '"text"', "null", "true", "[]", json.dumps([envelope("matches.list")])])
def test_a_body_that_is_not_an_object_is_an_invalid_request(body: str, api_key: str) -> None:
    answer = post_rpc(body, api_key)
    assert error_code(answer) == "invalid_request"
    assert answer["id"] is None


@pytest.mark.parametrize(
    ("change", "message_part"),
    [
        ({"jsonrpc": "1.0"}, "jsonrpc"),
        ({"jsonrpc": 2.0}, "jsonrpc"),
        ({"jsonrpc": None}, "jsonrpc"),
        ({"method": 7}, "method"),
        ({"method": None}, "method"),
        ({"method": ["matches.list"]}, "method"),
        ({"params": []}, "params"),
        ({"params": "sports=football"}, "params"),
        ({"params": 1}, "params"),
        ({"params": None}, "params"),
    ],
)
def test_a_malformed_envelope_is_an_invalid_request_echoing_a_string_id(
    change: dict[str, object], message_part: str, api_key: str
) -> None:
    request = {**envelope("matches.list", {}, request_id="abc"), **change}
    answer = post_rpc(json.dumps(request), api_key)
    assert error_code(answer) == "invalid_request"
    assert message_part in answer["error"]["message"]
    assert answer["id"] == "abc"


@pytest.mark.parametrize("request_id", [1, 1.5, None, True, ["a"], {"a": 1}])
def test_an_id_that_is_not_a_string_is_an_invalid_request_with_null_id(request_id: object, api_key: str) -> None:
    request = {**envelope("matches.list"), "id": request_id}
    answer = post_rpc(json.dumps(request), api_key)
    assert error_code(answer) == "invalid_request"
    assert answer["id"] is None


def test_a_missing_id_is_an_invalid_request(api_key: str) -> None:
    request = envelope("matches.list")
    del request["id"]
    assert error_code(post_rpc(json.dumps(request), api_key)) == "invalid_request"


def test_absent_params_mean_an_empty_object(api_key: str) -> None:
    answer = post_rpc(json.dumps(envelope("matches.list")), api_key)
    assert answer["result"]["pagination"]["limit"] == 20


def test_an_unknown_method_is_method_not_found(api_key: str) -> None:
    answer = post_rpc(json.dumps(envelope("matches.delete", {}, request_id="x")), api_key)
    assert error_code(answer) == "method_not_found"
    assert answer["id"] == "x"
    assert "matches.delete" in answer["error"]["message"]


def test_a_body_over_64_kib_is_an_invalid_request(api_key: str) -> None:
    request = envelope("matches.list", {"cursor": "x" * MAX_BODY_BYTES})
    answer = post_rpc(json.dumps(request), api_key)
    assert error_code(answer) == "invalid_request"
    assert "64 KiB" in answer["error"]["message"]


def test_a_body_just_under_64_kib_is_read_whole(api_key: str) -> None:
    request = envelope("matches.list", {"sports": ["football"]}, request_id="padded")
    body = json.dumps(request)
    body = body[:-1] + " " * (MAX_BODY_BYTES - len(body)) + "}"
    assert len(body) == MAX_BODY_BYTES
    answer = post_rpc(body, api_key)
    assert answer["result"]["data"][0]["sport"] == "football"


def test_a_successful_response_has_result_and_no_error(api_key: str) -> None:
    answer = post_rpc(json.dumps(envelope("matches.list", {}, request_id="ok-1")), api_key)
    assert set(answer) == {"jsonrpc", "id", "result"}
    assert answer["id"] == "ok-1"


def test_an_error_response_has_error_and_no_result(api_key: str) -> None:
    answer = post_rpc(json.dumps(envelope("matches.list", {"limit": 0}, request_id="bad-1")), api_key)
    assert set(answer) == {"jsonrpc", "id", "error"}
    assert set(answer["error"]) == {"code", "message"}
    assert all(isinstance(answer["error"][field], str) for field in ("code", "message"))


@pytest.mark.parametrize("method", ["matches.subscribe", "matches.unsubscribe"])
def test_websocket_only_methods_over_http_point_at_the_socket(api_key: str, method: str) -> None:
    answer = post_rpc(json.dumps(envelope(method, {})), api_key)
    assert error_code(answer) == "method_not_found"
    assert "/sdk/v1/ws" in answer["error"]["message"]
