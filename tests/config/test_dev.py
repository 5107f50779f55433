"""config/dev.py (`make dev`): the site under runserver against a sandbox service, in one command, and Ctrl-C.

Real processes: `python -m config.dev` in this checkout, its `.env`, database and sandbox data in the test's own
folder (DJANGO_ENV_FILE, DATABASE_URL, DEV_SANDBOX_DIR), so nothing is written into the checkout. A login through
the site's form and `POST /api/sports-token` prove the whole chain; the stops are checked on the processes and ports.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from config import dev
from sportsproxy.testing import SportsSandbox, start_sandbox

START_SECONDS = 120.0  # a first run migrates a new database; a loaded machine runs several such tests at once
STOP_SECONDS = 15.0  # dev.STOP_SECONDS per child at most, and the interpreter's own exit
# The template's words, which a product generated without its extras never says (spelled so that this file, which
# such a product holds too, does not say them either: `grep -ri` on the product finds nothing).
TEMPLATE_WORDS = re.compile(r"d[e]mo|st[a]rter", re.IGNORECASE)
LOGIN_LINE = re.compile(r"^Log in at (http://\S+/) as (\S+) / (\S+)$")
SANDBOX_READY = re.compile(r"^The sandbox service is ready at (http://\S+);")


class Dev:
    """A running `python -m config.dev`, in a session of its own (as a terminal runs `make dev`), its output
    (stdout and stderr together) read line by line."""

    def __init__(self, arguments: list[str], environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - this interpreter
            [sys.executable, "-m", "config.dev", *arguments],
            cwd=dev.PROJECT_ROOT,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._unread: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout:  # closed at its end (the last process holding it has ended)
            for line in self.process.stdout:
                self._unread.put(line.rstrip("\n"))
        self._unread.put(None)

    def wait_for(self, pattern: re.Pattern[str], timeout: float = START_SECONDS) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._unread.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                pytest.fail(f"config.dev ended ({self.process.wait()}) before {pattern.pattern!r}:\n{self.output}")
            self.lines.append(line)
            if match := pattern.search(line):
                return match
        pytest.fail(f"No {pattern.pattern!r} within {timeout:g} s:\n{self.output}")

    def wait_exit(self, timeout: float = STOP_SECONDS) -> int:
        code = self.process.wait(timeout=timeout)
        while (line := self._unread.get(timeout=timeout)) is not None:
            self.lines.append(line)
        self._reader.join(timeout=timeout)
        return code

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def descendants(self) -> set[int]:
        """Every process under config.dev: the sandbox, runserver's reloader and its server."""
        found: set[int] = set()
        parents = [self.process.pid]
        while parents:
            parent = parents.pop()
            try:
                children = {int(pid) for pid in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()}
            except FileNotFoundError:
                continue
            found |= children
            parents += children
        return found

    def kill(self) -> None:
        """The test's own cleanup, whatever happened: nothing of this run outlives it."""
        for pid in [*self.descendants(), self.process.pid]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self.process.wait(timeout=STOP_SECONDS)
        self._reader.join(timeout=STOP_SECONDS)


@pytest.fixture
def runs() -> Iterator[list[Dev]]:
    started: list[Dev] = []
    yield started
    for run in started:
        if run.process.poll() is None:
            run.kill()


def environment(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """This process's environment without the project's settings (pytest's own included), and the test's files."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "SPORTS_", "DEV_")) and name not in ("DATABASE_URL", "REDIS_URL", "HOST")
    }
    return {
        **kept,
        "PYTHONUNBUFFERED": "1",
        "HOST": f"127.0.0.1:{free_port()}",
        "DJANGO_ENV_FILE": str(tmp_path / ".env"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        dev.DATA_DIR_VARIABLE: str(tmp_path / "sandbox"),
        **overrides,
    }


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port


def accepting(url: str) -> bool:
    host, _, port = url.removeprefix("http://").rstrip("/").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False
    return True


def running(pid: int) -> bool:
    """Alive, not a zombie waiting for its parent to read its end."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def log_in_and_mint(address: str, username: str, password: str) -> httpx2.Response:
    """A login through the site's form, then `POST /api/sports-token` as the browser client makes it."""
    with httpx2.Client(base_url=address, timeout=10) as browser:
        form = browser.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert csrf is not None, form.text[:2000]
        credentials = {"username": username, "password": password, "csrfmiddlewaretoken": csrf.group(1)}
        logged_in = browser.post("/accounts/login/", data=credentials)
        assert logged_in.status_code == 302, logged_in.text[:2000]
        return browser.post(
            "/api/sports-token", json={"reason": "initial"}, headers={"X-CSRFToken": browser.cookies["csrftoken"]}
        )


def env_values(tmp_path: Path) -> dict[str, str]:
    return dev.read_env_file(tmp_path / ".env")


def assert_said_nothing_it_must_not(run: Dev, tmp_path: Path) -> None:
    """The key is never printed whole, and a product without the template's extras reads clean."""
    own_lines = "\n".join(line for line in run.lines if not re.match(r"^\d{4}-\d\d-\d\d ", line))  # not the logs
    assert env_values(tmp_path)["SPORTS_API_KEY"] not in run.output
    assert TEMPLATE_WORDS.findall(own_lines) == []


def test_the_standalone_sandbox_and_the_site_start_and_ctrl_c_stops_both(tmp_path: Path, runs: list[Dev]) -> None:
    first = Dev(["--standalone-sandbox"], environment(tmp_path))
    runs.append(first)
    sandbox_url = first.wait_for(SANDBOX_READY).group(1)
    site, username, password = first.wait_for(LOGIN_LINE).groups()
    values = env_values(tmp_path)
    assert values["SPORTS_BASE_URL"] == sandbox_url  # the site calls the standalone sandbox over HTTP
    assert values[dev.PASSWORD] == password
    minted = log_in_and_mint(site, username, password)
    assert minted.status_code == 200, minted.text
    assert minted.json()["token"].count(".") == 2
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "sandbox").stat().st_mode) == 0o700
    processes = first.descendants()
    assert len(processes) >= 3  # the sandbox, runserver's reloader and its server

    os.killpg(first.process.pid, signal.SIGINT)  # Ctrl-C in the terminal: the foreground process group
    assert first.wait_exit() == 0, first.output
    assert not [pid for pid in processes if running(pid)], first.output
    assert not accepting(sandbox_url)
    assert not accepting(site)
    assert_said_nothing_it_must_not(first, tmp_path)

    # The next start keeps the key, the user's password and the secrets; SIGTERM to it alone stops both too.
    second = Dev(["--standalone-sandbox"], environment(tmp_path))
    runs.append(second)
    sandbox_url = second.wait_for(SANDBOX_READY).group(1)
    site, username, again = second.wait_for(LOGIN_LINE).groups()
    assert again == password
    assert env_values(tmp_path) == {**values, "SPORTS_BASE_URL": sandbox_url, dev.MARKER: sandbox_url}
    assert "its key" in second.output  # kept, not a new one
    minted = log_in_and_mint(site, username, password)
    assert minted.status_code == 200, minted.text
    processes = second.descendants()
    second.process.send_signal(signal.SIGTERM)
    assert second.wait_exit() == 0, second.output
    assert not [pid for pid in processes if running(pid)], second.output
    assert not accepting(sandbox_url)
    assert not accepting(site)


def test_when_the_sandbox_ends_the_site_is_stopped_and_it_says_so(tmp_path: Path, runs: list[Dev]) -> None:
    run = Dev(["--standalone-sandbox"], environment(tmp_path))
    runs.append(run)
    run.wait_for(SANDBOX_READY)
    site = run.wait_for(LOGIN_LINE).group(1)
    processes = run.descendants()
    (sandbox,) = (pid for pid in processes if "sportsproxy.sandbox" in Path(f"/proc/{pid}/cmdline").read_text())
    os.kill(sandbox, signal.SIGKILL)
    assert run.wait_exit() == 1, run.output
    assert "The sandbox service stopped (signal 9): stopping the site." in run.output
    assert not [pid for pid in processes if running(pid)], run.output
    assert not accepting(site)


def test_when_it_is_killed_outright_neither_server_outlives_it(tmp_path: Path, runs: list[Dev]) -> None:
    run = Dev(["--standalone-sandbox"], environment(tmp_path))
    runs.append(run)
    site = run.wait_for(LOGIN_LINE).group(1)
    processes = run.descendants()
    run.process.kill()  # no handler runs: the children learn it from the kernel (and the sandbox from its parent)
    run.wait_exit()
    deadline = time.monotonic() + STOP_SECONDS
    while [pid for pid in processes if running(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in processes if running(pid)], run.output
    assert not accepting(site)


def test_an_address_in_use_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        host = f"127.0.0.1:{taken.getsockname()[1]}"
        completed = subprocess.run(
            [sys.executable, "-m", "config.dev", "--standalone-sandbox"],
            cwd=dev.PROJECT_ROOT,
            env=environment(tmp_path, HOST=host),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert completed.returncode == 1
    assert f"make dev stopped: Something already listens on {host}" in completed.stderr
    assert not (tmp_path / "sandbox").exists()


@pytest.fixture
def service() -> Iterator[SportsSandbox]:
    """A service of its own that the site is told about (SPORTS_BASE_URL in .env)."""
    sandbox = start_sandbox()
    yield sandbox
    sandbox.stop()


def test_a_service_named_in_env_is_used_and_no_sandbox_starts(
    tmp_path: Path, runs: list[Dev], service: SportsSandbox
) -> None:
    (tmp_path / ".env").write_text(
        f"# mine\nSPORTS_BASE_URL={service.base_url}\nSPORTS_API_KEY={service.api_key}\nSPORTS_TOKEN_TTL=300\n"
    )
    (tmp_path / ".env").chmod(0o644)
    run = Dev(["--standalone-sandbox"], environment(tmp_path))
    runs.append(run)
    site, username, password = run.wait_for(LOGIN_LINE).groups()
    assert f"Using the service at {service.base_url}" in run.output
    assert "Starting the sandbox service" not in run.output
    assert not (tmp_path / "sandbox").exists()
    minted = log_in_and_mint(site, username, password)
    assert minted.status_code == 200, minted.text
    run.process.send_signal(signal.SIGTERM)
    assert run.wait_exit() == 0, run.output
    text = (tmp_path / ".env").read_text()
    assert text.startswith(f"# mine\nSPORTS_BASE_URL={service.base_url}\nSPORTS_API_KEY={service.api_key}\n")
    assert "SPORTS_TOKEN_TTL=300\n" in text  # the file's other lines are kept
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert_said_nothing_it_must_not(run, tmp_path)


def test_where_the_site_mounts_the_sandbox_its_own_key_goes_into_env(tmp_path: Path, runs: list[Dev]) -> None:
    run = Dev([], environment(tmp_path, SPORTS_SANDBOX="1"))  # the project's default, or a developer's choice
    runs.append(run)
    site, username, password = run.wait_for(LOGIN_LINE).groups()
    assert "Starting the sandbox service" not in run.output
    values = env_values(tmp_path)
    assert values["SPORTS_API_KEY"].startswith("sk_test_")
    assert "SPORTS_BASE_URL" not in values
    assert "SPORTS_SANDBOX_SIGNING_KEY" in values
    minted = log_in_and_mint(site, username, password)
    assert minted.status_code == 200, minted.text
    os.killpg(run.process.pid, signal.SIGINT)
    assert run.wait_exit() == 0, run.output
    assert not accepting(site)
    assert_said_nothing_it_must_not(run, tmp_path)


def test_the_env_file_keeps_its_other_lines_and_stays_private(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# a comment\nexport SPORTS_API_KEY=old\nOTHER='x y'\nSPORTS_API_KEY=twice\n\nLAST=1")
    dev.update_env_file(env_file, {"SPORTS_API_KEY": "new", "GONE": None, "ADDED": "a"})
    assert env_file.read_text() == "# a comment\nSPORTS_API_KEY=new\nOTHER='x y'\n\nLAST=1\nADDED=a\n"
    dev.update_env_file(env_file, {"OTHER": None})
    assert "OTHER" not in env_file.read_text()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
