"""The pytest plugin `sportsproxy.testing`: the dashboard's powers through a running standalone
sandbox (another process, reached over HTTP only), and its start-up and stop."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from sportsproxy.testing import SandboxError, SportsSandbox, start_sandbox


@pytest.fixture
def account() -> str:
    """A name no other test of the session uses (the sandbox is shared by the session)."""
    return f"plugin-{secrets.token_hex(4)}"


def rpc(sandbox: SportsSandbox, method: str, credential: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = httpx2.post(
        f"{sandbox.base_url}/sdk/v1/rpc",
        json={"jsonrpc": "2.0", "id": "1", "method": method, "params": params or {}},
        headers={"Authorization": f"Bearer {credential}"},
        timeout=10,
    ).json()
    return answer


def refusal(answer: dict[str, Any]) -> tuple[str, str | None]:
    error = answer["error"]
    return error["code"], (error.get("data") or {}).get("reason")


def test_create_key_makes_a_key_of_the_tier_and_env_asked(sports_sandbox: SportsSandbox, account: str) -> None:
    secret = sports_sandbox.create_key(account, tier="business", env="live")
    assert secret.startswith("sk_live_")
    identity = rpc(sports_sandbox, "auth", secret)["result"]
    assert (identity["tier"], identity["env"]) == ("business", "live")
    assert rpc(sports_sandbox, "auth", sports_sandbox.create_key(account, tier="business"))["result"]["env"] == "test"


def test_create_key_refuses_another_tier_for_an_existing_account(sports_sandbox: SportsSandbox, account: str) -> None:
    sports_sandbox.create_key(account, tier="free")
    with pytest.raises(SandboxError, match=r"exists with tier 'free'\. Pass tier='free'"):
        sports_sandbox.create_key(account)  # growth, the default


def test_create_key_refuses_an_unknown_tier(sports_sandbox: SportsSandbox, account: str) -> None:
    with pytest.raises(SandboxError, match=r"\(400\): tier must be one of free, starter, growth, business"):
        sports_sandbox.create_key(account, tier="platinum")


def test_revoke_refuses_the_keys_next_request_and_not_its_tokens(sports_sandbox: SportsSandbox, account: str) -> None:
    secret = sports_sandbox.create_key(account)
    token = rpc(sports_sandbox, "tokens.create", secret, {"ttl": 60})["result"]["token"]
    sports_sandbox.revoke(secret)
    assert refusal(rpc(sports_sandbox, "auth", secret)) == ("unauthorized", "revoked_key")
    assert "result" in rpc(sports_sandbox, "matches.list", token)
    with pytest.raises(SandboxError, match="No key has this secret"):
        sports_sandbox.revoke("sk_test_" + "n" * 43)


def test_set_quota_is_in_force_at_once_for_keys_and_tokens(sports_sandbox: SportsSandbox, account: str) -> None:
    secret = sports_sandbox.create_key(account)
    token = rpc(sports_sandbox, "tokens.create", secret)["result"]["token"]
    sports_sandbox.set_quota(account, 0)
    for credential in (secret, token):
        assert refusal(rpc(sports_sandbox, "matches.list", credential)) == ("rate_limited", None)
    sports_sandbox.set_quota(account, 1000)
    for credential in (secret, token):
        assert "result" in rpc(sports_sandbox, "matches.list", credential)


def test_set_quota_names_an_unknown_account(sports_sandbox: SportsSandbox, account: str) -> None:
    with pytest.raises(SandboxError, match=rf"No account named '{account}'\. create_key\(account\) creates one"):
        sports_sandbox.set_quota(account, 5)


def test_expire_token_makes_a_valid_token_expired(sports_sandbox: SportsSandbox) -> None:
    token = rpc(sports_sandbox, "tokens.create", sports_sandbox.api_key)["result"]["token"]
    sports_sandbox.expire_token(token)
    assert refusal(rpc(sports_sandbox, "matches.list", token)) == ("unauthorized", "expired_token")
    with pytest.raises(SandboxError, match="not a valid token of this sandbox"):
        sports_sandbox.expire_token(token)


@pytest.mark.parametrize(
    ("headers", "body", "status", "error"),
    [
        ({}, {"account": "x"}, 401, "not_authenticated"),
        ({"Authorization": "Bearer wrong"}, {"account": "x"}, 401, "not_authenticated"),
        (None, [1], 400, "bad_request"),
        (None, {"account": ""}, 400, "bad_request"),
        (None, {"account": "x", "env": "staging"}, 400, "bad_request"),
    ],
)
def test_control_requests_are_authenticated_and_validated(
    sports_sandbox: SportsSandbox, headers: dict[str, str] | None, body: Any, status: int, error: str
) -> None:
    control = sports_sandbox._control  # carries the session's control secret
    sent = control.headers if headers is None else headers
    response = httpx2.post(f"{sports_sandbox.base_url}/control/v1/keys", json=body, headers=sent, timeout=10)
    assert (response.status_code, response.json()["error"]) == (status, error)
    assert response.json()["message"]


def test_a_quota_must_be_a_whole_number(sports_sandbox: SportsSandbox, account: str) -> None:
    sports_sandbox.create_key(account)
    for wrong in (-1, 2.5, "5", True):
        response = sports_sandbox._control.post(
            "/control/v1/quota", json={"account": account, "requestsPerMinute": wrong}
        )
        assert (response.status_code, response.json()["error"]) == (400, "bad_request"), wrong


def test_control_endpoints_answer_post_only(sports_sandbox: SportsSandbox) -> None:
    response = sports_sandbox._control.get("/control/v1/keys")
    assert (response.status_code, response.json()["error"]) == (405, "method_not_allowed")


def test_a_failed_start_says_why_with_the_servers_stderr() -> None:
    with pytest.raises(SandboxError) as failed:
        start_sandbox("--tier", "platinum")
    message = str(failed.value)
    assert "exited (2) before it was ready" in message
    assert "invalid choice: 'platinum'" in message  # argparse's line, from the server's stderr


def test_a_start_that_outlasts_the_timeout_fails_with_the_bound() -> None:
    with pytest.raises(SandboxError, match=r"printed no ready line within 0\.001 s") as failed:
        start_sandbox(timeout=0.001)
    assert "sandbox` extra" in str(failed.value)


def test_stop_ends_the_process() -> None:
    sandbox = start_sandbox()
    assert rpc(sandbox, "auth", sandbox.api_key)["result"]["tier"] == "growth"
    sandbox.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(sandbox.pid, 0)  # stopped and reaped


ABANDONS_ITS_SANDBOX = """
import os
from sportsproxy.testing import start_sandbox
print(start_sandbox().pid, flush=True)
os._exit(0)  # as a killed test run ends: no teardown, no stop()
"""


def test_a_sandbox_whose_starter_dies_without_stopping_it_stops_itself() -> None:
    starter = subprocess.run(  # noqa: S603 - this interpreter and a fixed script
        [sys.executable, "-c", ABANDONS_ITS_SANDBOX], capture_output=True, text=True, timeout=60, check=True
    )
    orphan = int(starter.stdout.strip())
    deadline = time.monotonic() + 10  # it notices within 0.1 s, and stops within 5 s
    try:
        while Path(f"/proc/{orphan}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{orphan}").exists(), "the abandoned sandbox is still running"
    finally:
        if Path(f"/proc/{orphan}").exists():
            os.kill(orphan, signal.SIGKILL)
