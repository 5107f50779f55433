"""The management commands `sandbox_key` and `demo_setup`, run for real."""

from __future__ import annotations

import io
from pathlib import Path

import jwt
import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.test import override_settings

from sportsproxy.sandbox.keys import hash_secret, issue_key
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


def test_demo_setup_creates_user_account_key_and_env_file(tmp_path: Path, rpc: RpcCall) -> None:
    env_file = tmp_path / ".env"
    output = run("demo_setup", "--env-file", str(env_file))
    assert authenticate(username="demo", password="demo-pass-123") is not None
    assert Account.objects.get(name="demo").tier == "growth"
    written = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    assert set(written) == {"SPORTS_API_KEY", "DJANGO_SECRET_KEY", "SPORTS_SANDBOX_SIGNING_KEY"}
    assert written["SPORTS_API_KEY"].startswith("sk_test_")
    assert rpc("auth", {}, credential=written["SPORTS_API_KEY"])["result"]["tier"] == "growth"
    assert not any(written["SPORTS_API_KEY"] in line for line in output)
    assert env_file.stat().st_mode & 0o777 == 0o600


def test_demo_setup_is_idempotent(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    run("demo_setup", "--env-file", str(env_file))
    first = env_file.read_text()
    run("demo_setup", "--env-file", str(env_file))
    assert env_file.read_text() == first
    assert ApiKey.objects.count() == 1


def test_demo_setup_restores_a_configured_key_into_a_fresh_database(rpc: RpcCall, tmp_path: Path) -> None:
    secret = "sk_test_" + "k" * 43
    with override_settings(SPORTS_API_KEY=secret):
        run("demo_setup", "--env-file", str(tmp_path / ".env"))
    assert "result" in rpc("auth", {}, credential=secret)
    assert "SPORTS_API_KEY" not in (tmp_path / ".env").read_text()
