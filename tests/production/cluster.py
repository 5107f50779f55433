"""Two server processes of this project sharing one PostgreSQL database and one Redis.

Everything is real: `manage.py migrate` on a fresh PostgreSQL database, and two nodes each
started as `make serve` starts one (`python -m config.serve`: gunicorn for HTTP, uvicorn for
the sandbox's WebSocket on the next address), Redis for the cache and the channel layer.
`Cluster` cleans up after itself (processes, database, Redis keys).

What `make serve` does before it serves, `migrate` and `collectstatic`, runs once per configuration
(settings module, sandbox mounted or not) and test process: each cluster's database is a copy of
that migrated one (PostgreSQL's `CREATE DATABASE ... TEMPLATE`) and its pages use those collected
files (tests/production/test_make_serve.py runs the whole of `make serve`).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import django_ratelimit.core
import httpx2
import psycopg
import pytest
import redis

from tests import stores
from tests.workers import worker_index

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The databases of the tests' Redis (tests/stores.py) that these tests flush: one per purpose, and a set of them per
# pytest-xdist worker, so that two workers never flush each other's (docs/contributing.md, "Running the tests in
# parallel"). Four workers at most: stores.REDIS_DATABASES.
SHARED_REDIS_DATABASES = ("cluster", "site-mode")


def shared_redis_url(purpose: str) -> str:
    """The URL of the database of the tests' Redis this worker flushes for `purpose` (one of SHARED_REDIS_DATABASES)."""
    return stores.redis_url(worker_index() * len(SHARED_REDIS_DATABASES) + SHARED_REDIS_DATABASES.index(purpose))


REDIS_URL = shared_redis_url("cluster")  # a database of its own, flushed before and after
PASSWORD = "cluster-pass-123"
USERNAME = "player"  # every cluster's one user, logged in with PASSWORD
# `make serve` is production (debug off; it refuses debug on), on the test machine's plain HTTP.
PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    # Plain HTTP on the test machine (behind the TLS proxy these stay on).
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DJANGO_SECURE_COOKIES": "0",
}


def logged_in(
    url: str, username: str = USERNAME, password: str = PASSWORD, *, headers: dict[str, str] | None = None
) -> httpx2.Client:
    """A client of the site at `url`, logged in through its login form."""
    browser = httpx2.Client(base_url=url, timeout=10)
    form = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/accounts/login/").text)
    assert form is not None
    answer = browser.post(
        "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": form.group(1)},
        headers=headers,
    )
    assert answer.status_code == 302, answer.text
    return browser


def mint(browser: httpx2.Client, url: str = "") -> httpx2.Response:
    """A fresh mint (reason "unauthorized": no reuse hides a call) at `url`, or at the client's own site."""
    csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
    return browser.post(f"{url}/api/sports-token", json={"reason": "unauthorized"}, headers=csrf)


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def engines_available() -> str | None:
    """None when PostgreSQL and Redis answer, else what is missing."""
    try:
        with psycopg.connect(stores.DATABASE_URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        return f"PostgreSQL at {stores.postgres_where()} is not reachable ({error})"
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        return f"Redis at {stores.redis_where()} is not reachable ({error})"
    return None


def require_engines() -> None:
    """Skip without PostgreSQL and Redis; under CI, where .ci/run starts both, fail instead."""
    missing = engines_available()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)


class Cluster:
    def __init__(self, **overrides: str) -> None:
        self.database = f"sports_cluster_{secrets.token_hex(4)}"
        self.environment = {
            **os.environ,
            "DJANGO_ENV_FILE": "",
            **PRODUCTION,
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_urlsafe(48),
            "DATABASE_URL": stores.postgres_url(self.database),
            "REDIS_URL": REDIS_URL,
            "SPORTS_BASE_URL": "",
            "SPORTS_SANDBOX": "1",
            "SPORTS_TOKEN_RATE": "5/h",  # an hour-long window: the test never straddles two
            "SPORTS_SANDBOX_SLOT_HEARTBEAT": "1",  # a killed worker's sockets are forgotten in 2 s
            "WEB_DRAIN_SECONDS": "0",  # a stop at once: the tests of the drain set their own
            "DJANGO_LOG_LEVEL": "WARNING",
            **overrides,
        }
        self.workers = 1  # gunicorn worker processes per node
        self.processes: list[subprocess.Popen[bytes]] = []  # one config.serve launcher per node
        self.events: list[bool] = []  # whether each node runs the sandbox's event simulation
        self.urls: list[str] = []  # each node's HTTP
        self.ws_urls: list[str] = []  # each node's sandbox WebSocket

    def start(self, *, events_in: tuple[bool, ...] = (True, False)) -> None:
        redis.Redis.from_url(REDIS_URL).flushdb()
        self.prepare()
        sandbox = self.environment["SPORTS_SANDBOX"] == "1"
        self.site_key = self.new_key("cluster-site", "growth") if sandbox else self.environment["SPORTS_API_KEY"]
        for events in events_in:
            self._start_server(events)

    def prepare(self) -> None:
        """What `make serve` does before it serves: this node's database migrated (a copy of its configuration's,
        with the user USERNAME), the static files collected."""
        template, static_root = prepared(self.environment)
        deadline = time.monotonic() + 5
        with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
            # The setup's last connection to the template may not have ended yet on the server's side.
            while True:
                try:
                    admin.execute(f'CREATE DATABASE "{self.database}" TEMPLATE "{template}"')
                    break
                except psycopg.errors.ObjectInUse:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        self.environment["DJANGO_STATIC_ROOT"] = static_root

    def _start_server(self, events: bool) -> None:
        port, ws_port = free_port(), free_port()
        self.processes.append(self._launch(events, port, ws_port))
        self.events.append(events)
        self.urls.append(f"http://127.0.0.1:{port}")
        self.ws_urls.append(f"ws://127.0.0.1:{ws_port}/sdk/v1/ws")

    def restart(self, node: int) -> None:
        """Start node `node` again on its own addresses (a proxy in front knows them), once its launcher has exited."""
        assert self.processes[node].poll() is not None, "the node still runs"
        port = int(self.urls[node].rpartition(":")[2])
        ws_port = int(self.ws_urls[node].removesuffix("/sdk/v1/ws").rpartition(":")[2])
        self.processes[node] = self._launch(self.events[node], port, ws_port)

    def _launch(self, events: bool, port: int, ws_port: int) -> subprocess.Popen[bytes]:
        """A node's config.serve on `port` (and `ws_port` for the socket), once it answers."""
        environment = {
            **self.environment,
            "SPORTS_API_KEY": self.site_key,
            "SPORTS_SANDBOX_EVENTS": "1" if events else "0",
            "HOST": f"127.0.0.1:{port}",
            "SPORTS_SANDBOX_WS_HOST": f"127.0.0.1:{ws_port}",
            "WEB_CONCURRENCY": str(self.workers),  # one by default: two nodes are the two processes
        }
        command = [sys.executable, "-m", "config.serve"]
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=environment)  # noqa: S603 - fixed command
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                sandbox = self.environment["SPORTS_SANDBOX"] == "1"
                if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200 and (not sandbox or _listening(ws_port)):
                    return process
            except httpx2.TransportError:
                pass
            time.sleep(0.2)
        self.processes.append(process)  # stopped with the others
        raise RuntimeError(f"The node on ports {port} and {ws_port} did not start within 30 s")

    def socket_server(self, node: int) -> int:
        """The pid of a node's WebSocket server (uvicorn, a child of its config.serve launcher)."""
        for child in Path(f"/proc/{self.processes[node].pid}/task").glob("*/children"):
            for pid in child.read_text().split():
                if b"uvicorn" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return int(pid)
        raise RuntimeError(f"node {node} runs no uvicorn")

    def manage(self, *arguments: str) -> str:
        return manage(self.environment, *arguments)

    def new_key(self, account: str, tier: str) -> str:
        return self.manage("sandbox_key", "create", "--account", account, "--tier", tier).splitlines()[-1]

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=25)  # config.serve gives its servers 15 s
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)  # reaped, so no ResourceWarning lands in a later test
        with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        redis.Redis.from_url(REDIS_URL).flushdb()


def manage(environment: dict[str, str], *arguments: str) -> str:
    """`manage.py` with `arguments` in `environment`: its output, or RuntimeError with its errors."""
    completed = subprocess.run(  # noqa: S603 - fixed interpreter and script
        [sys.executable, "manage.py", *arguments],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"manage.py {arguments[0]} failed:\n{completed.stderr}")
    return completed.stdout


# Per configuration (settings module, sandbox mounted): the migrated database every cluster's is copied from,
# and the folder of collected static files they all serve (read only). `_made` also holds any left half made.
_prepared: dict[tuple[str, str], tuple[str, str]] = {}
_made: list[tuple[str, str]] = []


def prepared(environment: dict[str, str]) -> tuple[str, str]:
    """The template database and the static folder for `environment`'s configuration, made at its first use in
    this test process: `migrate`, the user USERNAME, and `collectstatic` as `make serve` runs it (debug off)."""
    configuration = (environment.get("DJANGO_SETTINGS_MODULE", ""), environment["SPORTS_SANDBOX"])
    if configuration not in _prepared:
        template = f"sports_template_{secrets.token_hex(4)}"
        static_root = tempfile.mkdtemp(prefix="sports-static-")
        _made.append((template, static_root))
        with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{template}"')
        setup = {
            **environment,
            "DATABASE_URL": stores.postgres_url(template),  # straight to PostgreSQL, whatever the node goes through
            "DJANGO_STATIC_ROOT": static_root,
            "DJANGO_DEBUG": "0",
        }
        manage(setup, "migrate", "--no-input")
        manage(setup, "collectstatic", "--no-input", "--verbosity", "0")
        user = f"User.objects.create_user({USERNAME!r}, password={PASSWORD!r})"
        manage(setup, "shell", "-c", f"from django.contrib.auth.models import User; {user}")
        _prepared[configuration] = (template, static_root)
    return _prepared[configuration]


def drop_prepared() -> None:
    """Drop the template databases and static folders `prepared` made in this test process."""
    if not _made:
        return
    with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
        for template, static_root in _made:
            admin.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
            shutil.rmtree(static_root, ignore_errors=True)
    _made.clear()
    _prepared.clear()


# The `cluster` fixture's sockets are pinged after this much silence rather than the service's 25 s, so a test
# can hold idle sockets past two pings in under half a minute.
PING_AFTER_SECONDS = 6

LOGIN_WINDOW_SECONDS = 60  # the login throttle counts failures per minute (config/login.py)


def seconds_left_in_window(address: str) -> float:
    """What is left of the login throttle's current minute for `address`: django-ratelimit's windows end at an
    offset of their key's own (`_get_window`, keyed here on the client IP)."""
    return django_ratelimit.core._get_window(address, LOGIN_WINDOW_SECONDS) - time.time()


def a_fresh_minute_for(*addresses: str, needed: float = 15) -> None:
    """Wait, when one is nearly over, until the login throttle's minute of every address has `needed`
    seconds left, so that a test's attempts fall in one window."""
    deadline = time.monotonic() + 2 * LOGIN_WINDOW_SECONDS
    while (left := min(seconds_left_in_window(each) for each in addresses)) < needed:
        assert time.monotonic() < deadline, "no moment left every window 15 s"
        time.sleep(max(0.1, left + 1))


_handed_out: set[str] = set()  # each address serves one test of this process: no count carries over


def fresh_addresses(count: int, needed: float = 15) -> list[str]:
    """`count` loopback addresses (127.0.1.x), new to this test process, whose login-throttle minutes each have
    `needed` seconds left: a test's attempts from them fall in one window without waiting for one
    (a_fresh_minute_for waits, for an address a test cannot choose)."""
    fresh = [
        address
        for address in (f"127.0.1.{host}" for host in range(1, 255))
        if address not in _handed_out and seconds_left_in_window(address) >= needed
    ][:count]
    assert len(fresh) == count, "the loopback addresses 127.0.1.x have all been handed out"
    _handed_out.update(fresh)
    return fresh
