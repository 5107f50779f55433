"""The pytest plugin `sportsproxy.testing`: the dashboard's powers through a running standalone
sandbox (another process, reached over HTTP only), and its start-up and stop."""

from __future__ import annotations

import os
import secrets
import signal
import socket
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


def test_a_sandbox_whose_parent_dies_without_stopping_it_stops_itself() -> None:
    parent = subprocess.run(  # noqa: S603 - this interpreter and a fixed script
        [sys.executable, "-c", ABANDONS_ITS_SANDBOX], capture_output=True, text=True, timeout=60, check=True
    )
    orphan = int(parent.stdout.strip())
    deadline = time.monotonic() + 10  # it notices within 0.1 s, and stops within 5 s
    try:
        while Path(f"/proc/{orphan}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{orphan}").exists(), "the abandoned sandbox is still running"
    finally:
        if Path(f"/proc/{orphan}").exists():
            os.kill(orphan, signal.SIGKILL)


def test_start_sandbox_listens_on_the_port_given() -> None:
    port = free_port()
    sandbox = start_sandbox(port=port)
    try:
        assert sandbox.base_url == f"http://127.0.0.1:{port}"
        assert sandbox.ws_url == f"ws://127.0.0.1:{port}/sdk/v1/ws"
    finally:
        sandbox.stop()


ASKS_FOR_THE_PORT = """
import os


def test_port(sports_sandbox):
    assert sports_sandbox.base_url == "http://127.0.0.1:" + os.environ["EXPECTED_PORT"]
"""


def pytest_session(folder: Path, *arguments: str, expected_port: int = 0) -> subprocess.CompletedProcess[str]:
    """A pytest session of a site of its own in `folder`, with this plugin and `arguments`."""
    (folder / "test_port.py").write_text(ASKS_FOR_THE_PORT)
    project_root = str(Path(__file__).resolve().parents[2])
    environment = {**os.environ, "PYTHONPATH": project_root, "EXPECTED_PORT": str(expected_port)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "sportsproxy.testing",
        "-p",
        "no:django",
        "-p",
        "no:cacheprovider",
    ]
    return subprocess.run(  # noqa: S603 - this interpreter and fixed arguments
        [*command, "--rootdir", str(folder), "-c", str(folder / "pytest.ini"), *arguments],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_fixtures_port_is_chosen_on_the_command_line_over_the_ini_file(tmp_path: Path) -> None:
    """(The test below shows the ini file's option is read: its bad value is refused.)"""
    in_the_file, on_the_command_line = free_port(), free_port()
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nsports_sandbox_port = {in_the_file}\n")
    chosen = pytest_session(
        tmp_path, "--sports-sandbox-port", str(on_the_command_line), expected_port=on_the_command_line
    )
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr


def test_a_port_that_is_not_one_is_refused_with_how_to_fix_it(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nsports_sandbox_port = eighty\n")
    refused = pytest_session(tmp_path)
    assert refused.returncode != 0
    assert "sports_sandbox_port is 'eighty': give a port number from 1 to 65535" in refused.stdout + refused.stderr


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port
