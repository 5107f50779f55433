"""A PostgreSQL server of a test's own (the shared one on 5432 is never stopped): a primary, or a streaming
standby of one, on a free loopback port, that the test can kill and promote as a failover engine would.

PostgreSQL refuses to run as root, as the tests do on CI: there its programs (initdb, pg_ctl, pg_basebackup)
run as the `postgres` user (`runuser`), in a folder of /tmp that user owns; any other user runs them as
itself. Clients (the site, psql, psycopg) connect over TCP with trust authentication as the role
`postgres`, as they do to the shared server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tests.production.cluster import free_port

SERVER_USER = "postgres"  # the system user PostgreSQL's programs run as, and the superuser role


def postgres_bin() -> Path:
    """The folder of the newest PostgreSQL's programs (Debian: /usr/lib/postgresql/N/bin); a skip without one
    (a failure under CI, which installs it)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda path: int(path.parts[-3]))
    if not found or (_as_root() and shutil.which("runuser") is None):
        message = "PostgreSQL's server programs not found: install Debian's postgresql package (.ci/run does)."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found[-1].parent


def _as_root() -> bool:
    return os.geteuid() == 0


def _as_server_user(*command: str, timeout: float = 60) -> None:
    """One of PostgreSQL's programs, run as SERVER_USER when the tests run as root; RuntimeError with its
    output when it fails."""
    program = [str(postgres_bin() / command[0]), *command[1:]]
    as_user = ["runuser", "-u", SERVER_USER, "--"] if _as_root() else []  # util-linux's runuser
    completed = subprocess.run(  # noqa: S603 - PostgreSQL's own programs, fixed arguments
        [*as_user, *program],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({completed.returncode}):\n{completed.stdout}{completed.stderr}")


class PostgresServer:
    """A PostgreSQL server on 127.0.0.1:`port` (a free one unless given), its data in a folder of its own:
    a new primary (`start`), or a streaming standby of `primary` (`start` after `primary` started)."""

    def __init__(self, primary: PostgresServer | None = None, *, port: int | None = None) -> None:
        self.port = port or free_port()
        self.primary = primary
        self.folder = Path(tempfile.mkdtemp(prefix="sports-pg-"))
        if _as_root():
            shutil.chown(self.folder, SERVER_USER, SERVER_USER)
        self.data = self.folder / "data"
        self.running = False

    def url(self, database: str = "postgres") -> str:
        return f"postgres://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        if self.primary is None:
            _as_server_user(
                "initdb", "-D", str(self.data), "-U", SERVER_USER, "-A", "trust", "--no-sync", "--no-instructions"
            )
        else:
            # -R: standby.signal and primary_conninfo, so it starts as a streaming standby of `primary`.
            source = ("-h", "127.0.0.1", "-p", str(self.primary.port), "-U", SERVER_USER)
            _as_server_user("pg_basebackup", *source, "-D", str(self.data), "-R", "-X", "stream", "-c", "fast")
        with (self.data / "postgresql.auto.conf").open("a") as settings:
            settings.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.folder}'\n"
                # A throwaway server: nothing is kept across a crash of the machine, so no disk flushes.
                "fsync = off\nfull_page_writes = off\nshared_buffers = 16MB\n"
                # A standby's connection to its primary, bounded: a lost primary is noticed in seconds.
                "wal_receiver_timeout = 5s\nwal_sender_timeout = 5s\n"
            )
        log = self.folder / "server.log"
        _as_server_user("pg_ctl", "-D", str(self.data), "-l", str(log), "-w", "-t", "30", "start")
        self.running = True

    def execute(self, statement: str, database: str = "postgres") -> None:
        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=5) as connection:
            connection.execute(statement.encode())

    def is_primary(self) -> bool:
        with psycopg.connect(self.url(), connect_timeout=2) as connection:
            row = connection.execute("SELECT pg_is_in_recovery()").fetchone()
        return row is not None and row[0] is False

    def wait_replaying(self, seconds: float = 15) -> None:
        """Until this standby streams from its primary (bounded)."""
        assert self.primary is not None
        deadline = time.monotonic() + seconds
        query = "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
        while True:
            with psycopg.connect(self.primary.url(), connect_timeout=2) as connection:
                row = connection.execute(query).fetchone()
            if row is not None and row[0] >= 1:
                return
            assert time.monotonic() < deadline, f"the standby on {self.port} did not stream within {seconds} s"
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to the postmaster and every process it started, at once: a machine lost, not a shutdown
        (no process ends a connection or writes anything more)."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGSTOP)  # it starts no new process while its children are listed
        children = [int(child) for child in _children_of(pid)]
        for each in (pid, *children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_alive(each) for each in (pid, *children)):
            assert time.monotonic() < deadline, "PostgreSQL's processes did not end within 10 s of SIGKILL"
            time.sleep(0.02)
        self.running = False

    def promote(self) -> None:
        """This standby made the primary (pg_ctl waits until it accepts writes)."""
        _as_server_user("pg_ctl", "-D", str(self.data), "-w", "-t", "30", "promote")
        self.primary = None

    def stop(self) -> None:
        """Stopped (when running) and its folder removed."""
        if self.running:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                _as_server_user("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "20", "stop")
            self.running = False
        shutil.rmtree(self.folder, ignore_errors=True)


def _children_of(pid: int) -> list[str]:
    return [child for task in Path(f"/proc/{pid}/task").glob("*/children") for child in task.read_text().split()]


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed and not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
