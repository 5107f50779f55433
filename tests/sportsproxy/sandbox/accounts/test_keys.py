"""API keys on the real endpoint: format, states, rotation, browsers, last-used stamps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import Account, ApiKey
from tests.conftest import RpcCall
from tests.support import error_code


def key_row(secret: str) -> ApiKey:
    return ApiKey.objects.get(secret_hash=hash_secret(secret))


def test_a_new_key_has_its_prefix_and_at_least_32_random_characters(account: Account) -> None:
    _, live = issue_key(account, "live")
    _, test = issue_key(account, "test")
    assert live.startswith("sk_live_")
    assert len(live) - len("sk_live_") >= 32
    assert test.startswith("sk_test_")
    assert len(test) - len("sk_test_") >= 32


def test_only_the_hash_of_the_secret_is_stored(api_key: str) -> None:
    row = key_row(api_key)
    stored = [str(getattr(row, field.attname)) for field in ApiKey._meta.fields]
    assert not any(api_key in value or api_key[8:] in value for value in stored)


def test_an_active_key_authenticates(rpc: RpcCall, api_key: str) -> None:
    answer = rpc("auth", {}, credential=api_key)
    assert answer["result"] == {"ok": True, "expiresAt": None, "tier": "starter", "env": "test"}


def test_a_live_key_reports_the_live_environment(rpc: RpcCall, live_api_key: str) -> None:
    assert rpc("auth", {}, credential=live_api_key)["result"]["env"] == "live"


@pytest.mark.parametrize(
    "credential",
    [
        "sk_prod_" + "a" * 40,  # unknown environment
        "sk_live_short",  # too short
        "sk_live_" + "a" * 31,
        "sk_live_" + "a" * 40 + "!",  # not url-safe
        "pk_live_" + "a" * 40,  # wrong prefix (and so taken for a token)
        "sk_live_" + "a" * 40,  # well formed but unknown
    ],
)
def test_a_malformed_or_unknown_key_is_unauthorized(rpc: RpcCall, credential: str) -> None:
    assert error_code(rpc("matches.list", {}, credential=credential)) == "unauthorized"


def test_a_missing_authorization_header_is_unauthorized(rpc: RpcCall) -> None:
    answer = rpc("matches.list", {})
    assert error_code(answer) == "unauthorized"
    assert "Authorization" in answer["error"]["message"]


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer ", "Token sk_test_x", "sk_test_" + "a" * 40])
def test_a_malformed_authorization_header_is_unauthorized(rpc: RpcCall, header: str) -> None:
    assert error_code(rpc("matches.list", {}, HTTP_AUTHORIZATION=header)) == "unauthorized"


def test_a_revoked_key_fails_on_its_very_next_request(rpc: RpcCall, api_key: str) -> None:
    assert "result" in rpc("matches.list", {}, credential=api_key)
    key_row(api_key).revoke()
    answer = rpc("matches.list", {}, credential=api_key)
    assert error_code(answer) == "unauthorized"
    assert "revoked" in answer["error"]["message"]


def test_rotation_keeps_both_keys_working_until_the_old_one_is_revoked(rpc: RpcCall, account: Account) -> None:
    _, old = issue_key(account, "live")
    _, new = issue_key(account, "live")
    assert "result" in rpc("tokens.create", {}, credential=old)
    assert "result" in rpc("tokens.create", {}, credential=new)
    key_row(old).revoke()
    assert error_code(rpc("tokens.create", {}, credential=old)) == "unauthorized"
    assert "result" in rpc("tokens.create", {}, credential=new)


def test_keys_inherit_the_tier_of_their_account(rpc: RpcCall) -> None:
    business = Account.objects.create(name="bigco", tier="business")
    _, secret = issue_key(business, "live")
    assert rpc("auth", {}, credential=secret)["result"]["tier"] == "business"


def test_an_api_key_is_refused_from_a_browser(rpc: RpcCall, api_key: str) -> None:
    answer = rpc("matches.list", {}, credential=api_key, HTTP_ORIGIN="https://app.example.com")
    assert error_code(answer) == "unauthorized"
    assert "browser" in answer["error"]["message"]


def test_an_api_key_in_auth_params_is_refused_from_a_browser(rpc: RpcCall, api_key: str) -> None:
    answer = rpc("auth", {"apiKey": api_key}, credential=api_key, HTTP_ORIGIN="https://app.example.com")
    assert error_code(answer) == "unauthorized"
    assert "browser" in answer["error"]["message"]


def test_a_token_is_accepted_from_a_browser(rpc: RpcCall, api_key: str) -> None:
    token = rpc("tokens.create", {}, credential=api_key)["result"]["token"]
    assert rpc("matches.list", {}, credential=token, HTTP_ORIGIN="https://app.example.com")["result"]["data"]
    assert rpc("auth", {"token": token}, credential=token, HTTP_ORIGIN="https://app.example.com")["result"]["ok"]


def test_auth_over_http_accepts_params_that_repeat_the_bearer_credential(rpc: RpcCall, api_key: str) -> None:
    assert rpc("auth", {"apiKey": api_key}, credential=api_key)["result"]["env"] == "test"


def test_auth_over_http_refuses_params_naming_another_credential(rpc: RpcCall, api_key: str, account: Account) -> None:
    _, other = issue_key(account, "test")
    answer = rpc("auth", {"apiKey": other}, credential=api_key)
    assert error_code(answer) == "invalid_params"
    assert "Bearer" in answer["error"]["message"]


def test_last_used_is_recorded_at_most_once_per_interval(
    rpc: RpcCall, api_key: str, clock: ManualClock, django_assert_num_queries
) -> None:
    assert key_row(api_key).last_used_at is None
    rpc("matches.list", {}, credential=api_key)
    first_use = key_row(api_key).last_used_at
    assert first_use == clock.now()
    clock.advance(30)
    with django_assert_num_queries(1):  # the key lookup only: no write
        rpc("matches.list", {}, credential=api_key)
    assert key_row(api_key).last_used_at == first_use
    clock.advance(31)
    rpc("matches.list", {}, credential=api_key)
    assert key_row(api_key).last_used_at == first_use + timedelta(seconds=61)
