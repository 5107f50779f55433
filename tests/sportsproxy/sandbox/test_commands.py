"""The management command `sandbox_key`, run for real."""

from __future__ import annotations

import io

import jwt
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.models import Account, ApiKey
from tests.conftest import RpcCall
from tests.support import error_code


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().splitlines()


def test_create_prints_a_working_key_last_whose_revocation_takes_effect(rpc: RpcCall) -> None:
    secret = run("sandbox_key", "create", "--account", "acme", "--tier", "starter")[-1]
    assert secret.startswith("sk_test_")
    minted = rpc("tokens.create", {}, credential=secret)["result"]
    claims = jwt.decode(
        minted["token"], settings.SPORTS_SANDBOX_SIGNING_KEY, algorithms=["HS256"], audience="sports-sdk"
    )
    assert claims["tier"] == "starter"
    key_id = ApiKey.objects.get(secret_hash=hash_secret(secret)).public_id
    assert claims["sub"] == key_id
    run("sandbox_key", "revoke", key_id)
    assert error_code(rpc("tokens.create", {}, credential=secret)) == "unauthorized"
    assert "result" in rpc("matches.list", {}, credential=minted["token"])


def test_create_makes_the_account_once_and_honours_env() -> None:
    run("sandbox_key", "create", "--account", "acme", "--tier", "business", "--env", "live")
    secret = run("sandbox_key", "create", "--account", "acme")[-1]
    account = Account.objects.get(name="acme")
    assert account.tier == "business"
    assert account.keys.count() == 2
    assert secret.startswith("sk_test_")


def test_list_shows_key_ids_and_states_but_no_secret(account: Account) -> None:
    key, secret = issue_key(account, "live")
    key.revoke()
    output = "\n".join(run("sandbox_key", "list"))
    assert key.public_id in output
    assert "revoked" in output
    assert secret not in output
    assert secret[8:] not in output


def test_revoking_an_unknown_key_id_is_a_clear_error() -> None:
    with pytest.raises(CommandError, match="sandbox_key list"):
        call_command("sandbox_key", "revoke", "key_nope")
