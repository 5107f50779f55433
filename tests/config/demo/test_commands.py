"""`manage.py demo_setup`, run for real."""

from __future__ import annotations

import io
from pathlib import Path

from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import override_settings

from sportsproxy.sandbox.models import Account, ApiKey
from tests.conftest import RpcCall


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().splitlines()


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
