"""Params validation on the real endpoint: each bad value is invalid_params naming field and bound."""

from __future__ import annotations

import pytest

from tests.conftest import RpcCall
from tests.support import error_code

BAD_NUMBERS = [59, 86401, 0, -1, 1e9, 600.5, "600", True, False, None, [], {}]


@pytest.mark.parametrize("ttl", BAD_NUMBERS)
def test_a_bad_ttl_is_invalid_params_naming_the_bound(rpc: RpcCall, api_key: str, ttl: object) -> None:
    answer = rpc("tokens.create", {"ttl": ttl}, credential=api_key)
    assert error_code(answer) == "invalid_params"
    assert "ttl" in answer["error"]["message"]
    assert "60 to 86400" in answer["error"]["message"]


@pytest.mark.parametrize("limit", [0, -1, 101, 1e9, 20.5, "20", True, None, [], {}])
def test_a_bad_limit_is_invalid_params_naming_the_bound(rpc: RpcCall, api_key: str, limit: object) -> None:
    answer = rpc("matches.list", {"limit": limit}, credential=api_key)
    assert error_code(answer) == "invalid_params"
    assert "limit" in answer["error"]["message"]
    assert "1 to 100" in answer["error"]["message"]


@pytest.mark.parametrize("sports", ["football", [1], [None], [["football"]], {"football": True}, None, ["curling"]])
def test_bad_sports_are_invalid_params(rpc: RpcCall, api_key: str, sports: object) -> None:
    answer = rpc("matches.list", {"sports": sports}, credential=api_key)
    assert error_code(answer) == "invalid_params"
    assert "sports" in answer["error"]["message"]


@pytest.mark.parametrize("cursor", [1, None, True, [], "", "not-a-cursor", "eyJhZnRlciI6IC0xfQ", "bnVsbA"])
def test_a_bad_cursor_is_invalid_params(rpc: RpcCall, api_key: str, cursor: object) -> None:
    answer = rpc("matches.list", {"cursor": cursor}, credential=api_key)
    assert error_code(answer) == "invalid_params"
    assert "cursor" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("method", "params"), [("tokens.create", {"ttl": 600, "scope": "all"}), ("matches.list", {"sport": "x"})]
)
def test_unknown_params_are_invalid_params(rpc: RpcCall, api_key: str, method: str, params: dict[str, object]) -> None:
    answer = rpc(method, params, credential=api_key)
    assert error_code(answer) == "invalid_params"
    assert "Unknown param" in answer["error"]["message"]


@pytest.mark.parametrize(
    "params", [{"apiKey": 1}, {"token": None}, {"apiKey": "sk_x", "token": "y"}, {"password": "x"}, {"token": ""}]
)
def test_malformed_auth_params_are_invalid_params(rpc: RpcCall, api_key: str, params: dict[str, object]) -> None:
    assert error_code(rpc("auth", params, credential=api_key)) == "invalid_params"


def test_the_bounds_themselves_are_accepted(rpc: RpcCall, api_key: str) -> None:
    for ttl in (60, 86400):
        assert "result" in rpc("tokens.create", {"ttl": ttl}, credential=api_key)
    for limit in (1, 100):
        assert len(rpc("matches.list", {"limit": limit}, credential=api_key)["result"]["data"]) == limit
