"""`python -m sportsproxy.sandbox serve`, run from a new virtual environment that holds only the
wheel's `sandbox` extra (and pytest), in a folder that is not this repository."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import queue
import re
import signal
import socket
import stat
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.standalone.foreign_site import run_status, scrubbed_environment

READY_WITHIN_SECONDS = 10  # the contract's bound for the ready line
STOPPED_WITHIN_SECONDS = 5  # the contract's bound after SIGTERM or SIGINT
MAX_FRAME_BYTES = 65536  # the service's message size: a bigger frame is closed with 1009
CONTROL_SECRET = "control-secret-of-this-test"


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    ready: dict[str, str]
    stderr_path: Path

    def rpc(self, method: str, credential: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = httpx2.post(
            f"{self.ready['baseUrl']}/sdk/v1/rpc",
            json={"jsonrpc": "2.0", "id": "1", "method": method, "params": params or {}},
            headers={"Authorization": f"Bearer {credential}"},
            timeout=10,
        ).json()
        return answer

    def stop(self, signal_number: int = signal.SIGTERM) -> int:
        """Send the signal; the exit code, which must come within the contract's bound."""
        self.process.send_signal(signal_number)
        return self.process.wait(timeout=STOPPED_WITHIN_SECONDS)


@contextmanager
def serving(python: Path, folder: Path, *arguments: str, **environment: str) -> Iterator[Served]:
    """The command started in `folder`; yields once its first stdout line has been read."""
    stderr_path = folder / f"sandbox-{len(list(folder.glob('sandbox-*.log')))}.log"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(  # noqa: S603 - the test's own venv and arguments
            [str(python), "-m", "sportsproxy.sandbox", "serve", *arguments],
            cwd=folder,
            env=scrubbed_environment(**environment),
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        line = first_line(process, stderr_path)
        yield Served(process, json.loads(line), stderr_path)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOPPED_WITHIN_SECONDS)
        assert process.stdout is not None
        process.stdout.close()


def first_line(process: subprocess.Popen[bytes], stderr_path: Path) -> str:
    assert process.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    stdout = process.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=READY_WITHIN_SECONDS)
    except queue.Empty:
        raise AssertionError(f"No ready line within {READY_WITHIN_SECONDS} s:\n{stderr_path.read_text()}") from None
    assert line.endswith(b"\n"), f"stdout ended without a ready line:\n{stderr_path.read_text()}"
    return line.decode()


@asynccontextmanager
async def subscribed(ws_url: str, credential: dict[str, str]) -> AsyncIterator[ClientConnection]:
    """A socket authenticated with `credential` and subscribed to every sport."""
    async with connect(ws_url) as connection:
        for method, params in (("auth", credential), ("matches.subscribe", {})):
            await connection.send(json.dumps({"jsonrpc": "2.0", "id": method, "method": method, "params": params}))
            answer = json.loads(await connection.recv())
            assert "result" in answer, answer
        yield connection


async def first_event(ws_url: str, credential: dict[str, str]) -> dict[str, Any]:
    async with subscribed(ws_url, credential) as connection:
        while True:
            frame: dict[str, Any] = json.loads(await connection.recv())
            if frame.get("method") == "matches.event":
                return frame


def test_the_first_line_is_the_json_of_a_growth_test_key_on_one_address(sandbox_python: Path, tmp_path: Path) -> None:
    with serving(sandbox_python, tmp_path, "--port", "0") as served:
        assert set(served.ready) == {"baseUrl", "wsUrl", "apiKey"}
        address = re.fullmatch(r"http://127\.0\.0\.1:(\d+)", served.ready["baseUrl"])
        assert address is not None, served.ready
        assert served.ready["wsUrl"] == f"ws://127.0.0.1:{address.group(1)}/sdk/v1/ws"
        assert served.ready["apiKey"].startswith("sk_test_")
        identity = served.rpc("auth", served.ready["apiKey"])["result"]
        assert (identity["tier"], identity["env"]) == ("growth", "test")
        token = served.rpc("tokens.create", served.ready["apiKey"], {"ttl": 60})["result"]["token"]
        event = asyncio.run(asyncio.wait_for(first_event(served.ready["wsUrl"], {"token": token}), timeout=30))
        assert event["params"]["match"]["env"] == "test"
        assert served.stop() == 0
    log = served.stderr_path.read_text()
    assert re.search(r"Sports sandbox ready in \d+\.\d\d s", log), log
    assert "Traceback" not in log
    assert served.ready["apiKey"] not in log


def test_tier_and_env_choose_the_first_key(sandbox_python: Path, tmp_path: Path) -> None:
    with serving(sandbox_python, tmp_path, "--tier", "starter", "--env", "live") as served:
        assert served.ready["apiKey"].startswith("sk_live_")
        identity = served.rpc("auth", served.ready["apiKey"])["result"]
        assert (identity["tier"], identity["env"]) == ("starter", "live")
        assert served.stop() == 0


def test_data_keeps_keys_and_tokens_across_runs(sandbox_python: Path, tmp_path: Path) -> None:
    data = tmp_path / "not" / "yet" / "there"
    with serving(sandbox_python, tmp_path, "--data", str(data)) as first:
        first_key = first.ready["apiKey"]
        token = first.rpc("tokens.create", first_key, {"ttl": 600})["result"]["token"]
        assert first.stop() == 0
    with serving(sandbox_python, tmp_path, "--data", str(data)) as second:
        assert second.ready["apiKey"] != first_key
        for credential in (first_key, second.ready["apiKey"], token):
            assert "result" in second.rpc("matches.list", credential, {"limit": 1}), credential
        assert second.stop() == 0


def test_without_data_each_run_starts_empty_in_a_temporary_folder_it_removes(
    sandbox_python: Path, tmp_path: Path
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    with serving(sandbox_python, tmp_path, TMPDIR=str(temporary)) as first:
        assert [path.name for path in temporary.iterdir()] != []  # the database lives here meanwhile
        first_key = first.ready["apiKey"]
        assert first.stop() == 0
    assert list(temporary.iterdir()) == []
    with serving(sandbox_python, tmp_path, TMPDIR=str(temporary)) as second:
        assert second.rpc("auth", first_key)["error"]["data"]["reason"] == "unknown_key"
        assert second.stop() == 0
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_ends_it_with_exit_0_while_a_subscriber_is_connected(
    sandbox_python: Path, tmp_path: Path, signal_number: int
) -> None:
    with serving(sandbox_python, tmp_path) as served:

        async def subscribed_then_signalled() -> None:
            async with subscribed(served.ready["wsUrl"], {"apiKey": served.ready["apiKey"]}):
                served.process.send_signal(signal_number)
                await asyncio.to_thread(served.process.wait, STOPPED_WITHIN_SECONDS)

        asyncio.run(subscribed_then_signalled())
        assert served.process.returncode == 0
    log = served.stderr_path.read_text()
    assert "Traceback" not in log, log


def test_control_endpoints_exist_only_with_a_control_secret(sandbox_python: Path, tmp_path: Path) -> None:
    request = {"account": "acme", "tier": "starter"}
    with serving(sandbox_python, tmp_path) as served:
        assert httpx2.post(f"{served.ready['baseUrl']}/control/v1/keys", json=request).status_code == 404
        assert served.stop() == 0
    with serving(sandbox_python, tmp_path, SPORTS_SANDBOX_CONTROL_SECRET="control-secret-of-this-test") as served:
        keys = f"{served.ready['baseUrl']}/control/v1/keys"
        assert httpx2.post(keys, json=request).status_code == 401
        created = httpx2.post(keys, json=request, headers={"Authorization": "Bearer control-secret-of-this-test"})
        assert created.status_code == 201, created.text
        assert served.rpc("auth", created.json()["secret"])["result"]["tier"] == "starter"
        assert served.stop() == 0
    assert "control-secret-of-this-test" not in served.stderr_path.read_text()


async def ended_on_expiry(ws_url: str, token: str, expire: Callable[[], None]) -> tuple[dict[str, Any], int, float]:
    """A subscribed socket of `token`, then `expire()`: the notice it gets, its close code and how long they took."""
    async with subscribed(ws_url, {"token": token}) as connection:
        loop = asyncio.get_running_loop()
        expired_at = loop.time()
        await asyncio.to_thread(expire)
        while (notice := json.loads(await asyncio.wait_for(connection.recv(), 5))).get("method") == "matches.event":
            pass
        await asyncio.wait_for(connection.wait_closed(), 5)
        return notice, connection.close_code or 0, loop.time() - expired_at


def test_an_early_expiry_closes_the_tokens_sockets_and_survives_a_restart(sandbox_python: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    control = {"Authorization": f"Bearer {CONTROL_SECRET}"}
    with serving(sandbox_python, tmp_path, "--data", str(data), SPORTS_SANDBOX_CONTROL_SECRET=CONTROL_SECRET) as served:
        base_url = served.ready["baseUrl"]
        key = served.ready["apiKey"]
        ended, kept = (served.rpc("tokens.create", key, {"ttl": 600})["result"]["token"] for _ in range(2))

        def expire() -> None:
            answer = httpx2.post(f"{base_url}/control/v1/tokens/expire", json={"token": ended}, headers=control)
            assert answer.status_code == 200, answer.text

        notice, code, took = asyncio.run(ended_on_expiry(served.ready["wsUrl"], ended, expire))
        assert (notice, code) == ({"jsonrpc": "2.0", "method": "auth.expired", "params": {}}, 4401)
        assert took < 2
        assert served.stop() == 0
    with serving(sandbox_python, tmp_path, "--data", str(data)) as again:
        answer = again.rpc("matches.list", ended, {"limit": 1})
        assert answer["error"]["code"] == "unauthorized", answer
        assert "expired" in answer["error"]["message"]
        assert "result" in again.rpc("matches.list", kept, {"limit": 1})  # only that token ended
        assert again.stop() == 0


def test_a_port_in_use_fails_with_a_sentence_and_no_traceback(sandbox_python: Path, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        command = [str(sandbox_python), "-m", "sportsproxy.sandbox", "serve", "--port", port]
        status, output = run_status(command, cwd=tmp_path)
    assert status == 1, output
    assert f"Cannot listen on 127.0.0.1 port {port}: Address already in use. Choose another --port" in output
    assert "Traceback" not in output


async def first_answer(url: str, frame: str) -> dict[str, Any] | int | None:
    """The socket's answer to `frame`, or the close code it was refused with (None: no close frame)."""
    async with connect(url, max_size=None) as connection:
        try:
            await connection.send(frame)  # a big one is refused while it is still being sent
            answer: dict[str, Any] = json.loads(await asyncio.wait_for(connection.recv(), 10))
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else None
        return answer


def padded_auth(key: str, size: int) -> str:
    frame = json.dumps({"jsonrpc": "2.0", "id": "auth", "method": "auth", "params": {"apiKey": key}})
    return frame[:-1] + " " * (size - len(frame)) + "}"


def test_a_frame_over_65536_bytes_is_closed_with_1009(sandbox_python: Path, tmp_path: Path) -> None:
    with serving(sandbox_python, tmp_path) as served:
        url, key = served.ready["wsUrl"], served.ready["apiKey"]
        at_the_cap, over_the_cap = padded_auth(key, MAX_FRAME_BYTES), padded_auth(key, MAX_FRAME_BYTES + 1)
        assert (len(at_the_cap.encode()), len(over_the_cap.encode())) == (MAX_FRAME_BYTES, MAX_FRAME_BYTES + 1)
        accepted = asyncio.run(first_answer(url, at_the_cap))
        assert isinstance(accepted, dict), accepted
        assert "result" in accepted, accepted  # read, parsed and authenticated
        assert asyncio.run(first_answer(url, over_the_cap)) == 1009
        assert asyncio.run(first_answer(url, "x" * (16 * 1024 * 1024))) == 1009  # the 16 MiB frame
        assert served.stop() == 0


@contextmanager
def restored_umask(previous: int) -> Iterator[None]:
    try:
        yield
    finally:
        os.umask(previous)


def refusal(sandbox_python: Path, folder: Path) -> str:
    """What the command says when it refuses `--data folder`: exit 1, one sentence, no traceback."""
    command = [str(sandbox_python), "-m", "sportsproxy.sandbox", "serve", "--data", str(folder)]
    status, output = run_status(command, cwd=folder.parent)
    assert status == 1, output
    assert "Traceback" not in output
    assert output.count("\n") == 1, output
    return output


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777, 0o1777], ids=["group", "others", "both", "sticky"])
def test_a_data_folder_others_can_write_to_is_refused(sandbox_python: Path, tmp_path: Path, mode: int) -> None:
    data = tmp_path / "shared"
    data.mkdir()
    data.chmod(mode)
    output = refusal(sandbox_python, data)
    assert f"The data folder {data} is open to other users (mode {mode:04o}). Run `chmod go-w {data}`" in output
    assert list(data.iterdir()) == []  # nothing written there, not even the database


def test_a_data_folder_of_another_user_is_refused(sandbox_python: Path, tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody").pw_uid
    data = tmp_path / "theirs"
    data.mkdir(mode=0o700)
    os.chown(data, nobody, -1)  # a folder another user made (the test runs as root)
    (data / "signing-key").write_text("a key they chose, to forge tokens with")
    output = refusal(sandbox_python, data)
    assert f"The data folder {data} belongs to another user (uid {nobody})" in output


@pytest.mark.parametrize("name", ["sandbox.sqlite3", "sandbox.sqlite3-wal", "sandbox.sqlite3-journal", "sub/x"])
def test_an_entry_another_user_owns_is_refused_naming_it(sandbox_python: Path, tmp_path: Path, name: str) -> None:
    """A database planted by `nobody` in a folder that is the user's own (0700): refused, not used."""
    nobody = pwd.getpwnam("nobody").pw_uid
    data = tmp_path / "mine"
    data.mkdir(mode=0o700)
    planted = data / name
    planted.parent.mkdir(mode=0o700, exist_ok=True)
    planted.write_bytes(b"SQLite format 3\x00")
    planted.chmod(0o600)
    os.chown(planted, nobody, -1)  # another user's file (the test runs as root)
    output = refusal(sandbox_python, data)
    assert f"{planted} in the data folder belongs to another user (uid {nobody})" in output
    assert sorted(path.name for path in data.iterdir()) == sorted({name.split("/")[0]})  # nothing written


def test_a_folder_inside_another_user_owns_is_refused(sandbox_python: Path, tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody").pw_uid
    data = tmp_path / "mine"
    (data / "theirs").mkdir(mode=0o700, parents=True)
    data.chmod(0o700)
    os.chown(data / "theirs", nobody, -1)
    output = refusal(sandbox_python, data)
    assert f"{data / 'theirs'} in the data folder belongs to another user (uid {nobody})" in output


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o660], ids=["group", "others", "group-read-write"])
def test_an_entry_group_or_others_can_write_is_refused(sandbox_python: Path, tmp_path: Path, mode: int) -> None:
    data = tmp_path / "mine"
    data.mkdir(mode=0o700)
    database = data / "sandbox.sqlite3-shm"
    database.write_bytes(b"")
    database.chmod(mode)
    output = refusal(sandbox_python, data)
    assert f"{database} in the data folder is writable by other users (mode {mode:04o})" in output


def test_a_link_inside_is_refused(sandbox_python: Path, tmp_path: Path) -> None:
    data = tmp_path / "mine"
    data.mkdir(mode=0o700)
    (data / "sandbox.sqlite3").symlink_to(tmp_path / "elsewhere.sqlite3")
    output = refusal(sandbox_python, data)
    assert f"{data / 'sandbox.sqlite3'} in the data folder is a symbolic link" in output


def test_a_signing_key_another_user_can_read_is_refused(sandbox_python: Path, tmp_path: Path) -> None:
    data = tmp_path / "mine"
    data.mkdir(mode=0o700)
    key = data / "signing-key"
    key.write_text("a key others have read")
    key.chmod(0o644)
    output = refusal(sandbox_python, data)
    assert f"The signing key {key} is open to other users (mode 0644). Run `chmod go-rwx {key}`" in output


def test_a_data_folder_it_creates_is_0700_and_its_files_0600(sandbox_python: Path, tmp_path: Path) -> None:
    data = tmp_path / "new" / "data"
    usual = os.umask(0o022)  # the usual umask, the command's too (it inherits it): files would be 0644
    control_secret = {"SPORTS_SANDBOX_CONTROL_SECRET": CONTROL_SECRET}
    with restored_umask(usual), serving(sandbox_python, tmp_path, "--data", str(data), **control_secret) as served:
        control = {"Authorization": f"Bearer {CONTROL_SECRET}"}
        created = httpx2.post(f"{served.ready['baseUrl']}/control/v1/keys", json={"account": "acme"}, headers=control)
        assert created.status_code == 201, created.text
        assert "result" in served.rpc("tokens.create", created.json()["secret"], {"ttl": 60})
        assert served.stop() == 0
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in data.iterdir()}
    assert {"sandbox.sqlite3", "signing-key"} <= set(modes)
    assert (stat.S_IMODE(data.stat().st_mode), stat.S_IMODE((tmp_path / "new").stat().st_mode)) == (0o700, 0o700)
    assert modes == dict.fromkeys(modes, 0o600)
    data.chmod(0o755)  # others may read it (as `mkdir` makes it), not write to it: still the user's own
    with serving(sandbox_python, tmp_path, "--data", str(data)) as again:
        assert "result" in again.rpc("auth", created.json()["secret"])
        assert again.stop() == 0
