"""A pytest plugin: the sandbox as a test double for a site that uses this SDK.

Installed with the wheel (the `pytest11` entry point); it starts nothing until a test asks for
one of its fixtures:

    sports_sandbox    (session) a running `python -m sportsproxy.sandbox serve`, stopped at the
                      end of the session: `.base_url`, `.ws_url`, `.api_key`, and the dashboard's
                      powers `.create_key()`, `.revoke()`, `.set_quota()`, `.expire_token()`
    sports_settings   (test) with pytest-django: the site's SPORTS_BASE_URL and SPORTS_API_KEY
                      point at `sports_sandbox` for one test, and are restored after it

The sandbox listens on a free port unless one is chosen: `pytest --sports-sandbox-port 8123`, or
`sports_sandbox_port = 8123` in the ini file (the command line wins).

The server runs in a child process with the `sandbox` extra's packages; the dashboard's powers
reach it over HTTP with a control secret made for the session, never through its database.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx2
import pytest

from sportsproxy.extras import install_hint

__all__ = ["SandboxError", "SportsSandbox", "sports_sandbox", "sports_settings", "start_sandbox"]

# The server's side of this name is sportsproxy.sandbox.standalone's: the plugin talks to it as to
# another process (as the SDK to the service), and imports nothing of the sandbox.
CONTROL_SECRET_VARIABLE = "SPORTS_SANDBOX_CONTROL_SECRET"  # noqa: S105 - the name of a variable
START_TIMEOUT_SECONDS = 30.0  # the server is ready in well under 10 s; a loaded CI machine gets slack
STOP_TIMEOUT_SECONDS = 10.0
CONTROL_TIMEOUT_SECONDS = 10.0
STDERR_TAIL_CHARACTERS = 4000
PORT_SETTING = "sports_sandbox_port"  # the ini option's name, and the command line option's destination
MAX_PORT = 65535


class SandboxError(RuntimeError):
    """The sandbox did not start, or refused a dashboard request; the message says why."""


class SportsSandbox:
    """A running standalone sandbox: its addresses, its first key, and the dashboard's powers."""

    def __init__(
        self, process: subprocess.Popen[bytes], stderr: IO[bytes], ready: dict[str, str], control_secret: str
    ) -> None:
        self._process = process
        self._stderr = stderr
        self.base_url: str = ready["baseUrl"]
        self.ws_url: str = ready["wsUrl"]
        self.api_key: str = ready["apiKey"]
        self._control = httpx2.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {control_secret}"},
            timeout=CONTROL_TIMEOUT_SECONDS,
        )

    def __repr__(self) -> str:
        return f"SportsSandbox(base_url={self.base_url!r}, pid={self._process.pid})"

    @property
    def pid(self) -> int:
        return self._process.pid

    def create_key(self, account: str, tier: str = "growth", env: str = "test") -> str:
        """A new key of `account` (created with `tier` if needed) in `env`; returns its secret."""
        answer = self._post("/control/v1/keys", {"account": account, "tier": tier, "env": env})
        secret: str = answer["secret"]
        return secret

    def revoke(self, key: str) -> None:
        """Revoke the key with this secret (one that create_key or api_key gave): its next request fails."""
        self._post("/control/v1/keys/revoke", {"secret": key})

    def set_quota(self, account: str, requests_per_minute: int) -> None:
        """The account's requests-per-minute quota from now on; requests spent this minute still count."""
        self._post("/control/v1/quota", {"account": account, "requestsPerMinute": requests_per_minute})

    def expire_token(self, token: str) -> None:
        """Make a token of this sandbox fail as expired (`expired_token`) from now on."""
        self._post("/control/v1/tokens/expire", {"token": token})

    def stderr_tail(self) -> str:
        """The end of what the server logged (it logs to stderr only)."""
        return _tail(self._stderr)

    def stop(self) -> None:
        """SIGTERM, then wait (bounded); a server that has not stopped by then is killed."""
        self._control.close()
        _stop(self._process)
        self._stderr.close()

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._control.post(path, json=payload)
        except httpx2.HTTPError as error:
            raise SandboxError(f"The sandbox did not answer {path}: {error}.\n{self.stderr_tail()}") from None
        try:
            answer: dict[str, Any] = response.json()
        except ValueError:
            answer = {"message": f"an answer that is not JSON: {response.text[:200]!r}"}
        if response.is_error:
            raise SandboxError(f"The sandbox refused {path} ({response.status_code}): {answer.get('message')}")
        return answer


def start_sandbox(*arguments: str, port: int = 0, timeout: float = START_TIMEOUT_SECONDS) -> SportsSandbox:
    """Start `python -m sportsproxy.sandbox serve --port <port> *arguments` and wait (bounded) for its
    ready line. Port 0, the default, is a free one.

    The server stops on its own if this process ends without calling `stop()`."""
    control_secret = secrets.token_urlsafe(32)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by SportsSandbox.stop
    # --stop-with-parent: a test run killed before its teardown leaves no server behind.
    serve = ["serve", "--port", str(port), "--stop-with-parent"]
    command = [sys.executable, "-m", "sportsproxy.sandbox", *serve, *arguments]
    process = subprocess.Popen(  # noqa: S603 - this interpreter and fixed arguments
        command, stdout=subprocess.PIPE, stderr=stderr, env=_child_environment(control_secret)
    )
    try:
        ready = json.loads(_first_line(process, timeout))
    except (SandboxError, ValueError) as error:
        _stop(process)
        tail = _tail(stderr)
        stderr.close()
        raise SandboxError(
            f"{error} (It needs {install_hint('sandbox', 'channels PyJWT uvicorn websockets')}.)\n"
            f"The sandbox's stderr ended with:\n{tail}"
        ) from None
    return SportsSandbox(process, stderr, ready, control_secret)


def _child_environment(control_secret: str) -> dict[str, str]:
    """This process's environment, the control secret, and the folder this package was imported from
    when it is not an installed one (a checkout), so the child runs the same code."""
    environment = {**os.environ, CONTROL_SECRET_VARIABLE: control_secret}
    package_root = str(Path(__file__).resolve().parents[1])
    installed = {sysconfig.get_paths()[name] for name in ("purelib", "platlib")}
    if package_root not in installed:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
    return environment


def _first_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The first line the process writes to stdout, waiting at most `timeout` seconds."""
    assert process.stdout is not None
    received = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in received:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError(f"The sandbox printed no ready line within {timeout:g} s.")
            if not selector.select(remaining):
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                raise SandboxError(
                    f"The sandbox exited ({process.wait(timeout=STOP_TIMEOUT_SECONDS)}) before it was ready."
                )
            received += chunk
    return received.split(b"\n", 1)[0].decode()


def _tail(log: IO[bytes]) -> str:
    log.flush()
    size = log.seek(0, os.SEEK_END)
    log.seek(max(0, size - STDERR_TAIL_CHARACTERS))
    return log.read().decode(errors="replace")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
    if process.stdout is not None:
        process.stdout.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The sandbox's port: `--sports-sandbox-port`, or `sports_sandbox_port` in the ini file."""
    explained = "The port the sports_sandbox fixture's server listens on (default 0: a free one)."
    parser.getgroup("sportsproxy", "the sports sandbox").addoption(
        "--sports-sandbox-port", dest=PORT_SETTING, default=None, help=f"{explained} Wins over the ini option."
    )
    parser.addini(PORT_SETTING, explained, default="0")


def sandbox_port(config: pytest.Config) -> int:
    """The chosen port (the command line's, else the ini file's), checked."""
    chosen = config.getoption(PORT_SETTING)
    value = str(chosen if chosen is not None else config.getini(PORT_SETTING)).strip()
    if not value.isdigit() or int(value) > MAX_PORT:
        raise pytest.UsageError(
            f"--sports-sandbox-port / {PORT_SETTING} is {value!r}: give a port number from 1 to {MAX_PORT}, "
            "or 0 (the default) for a free one."
        )
    return int(value)


@pytest.fixture(scope="session")
def sports_sandbox(pytestconfig: pytest.Config) -> Iterator[SportsSandbox]:
    """A standalone sandbox for the whole session (started at first use, stopped at the end), on the
    chosen port or a free one."""
    sandbox = start_sandbox(port=sandbox_port(pytestconfig))
    yield sandbox
    sandbox.stop()


@pytest.fixture
def sports_settings(settings: Any, sports_sandbox: SportsSandbox) -> Any:
    """pytest-django's `settings`, with the site pointed at `sports_sandbox` for this test.

    SPORTS_TRANSPORT is set to "http" as well, so a site whose settings choose the in-process
    sandbox still calls the running one here.
    """
    settings.SPORTS_BASE_URL = sports_sandbox.base_url
    settings.SPORTS_API_KEY = sports_sandbox.api_key
    settings.SPORTS_TRANSPORT = "http"
    return settings
