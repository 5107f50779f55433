"""Shared fixtures: a controllable clock, sandbox accounts and keys, and an RPC caller; and how the
suite shares the machine under pytest-xdist (docs/contributing.md, "Running the tests in parallel")."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.cache import cache

from sportsproxy.sandbox import clock as sandbox_clock
from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.matches.book import book
from sportsproxy.sandbox.models import Account
from tests.asgi_server import AsgiServer
from tests.redis_server import RedisServer, require_redis_server
from tests.support import envelope, post_rpc

# The pytest plugin the wheel registers with its entry point (this checkout is not installed).
pytest_plugins = ["sportsproxy.testing"]

START = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)

RpcCall = Callable[..., dict[str, Any]]


# The modules and folders that start processes and wait on them, longest first: under xdist their groups are handed
# out first, in this order (`--no-loadscope-reorder` keeps it: pytest-xdist's own order is by the number of tests,
# which would hand a product's one long `make check` out last), so the quick modules fill the end of the run.
SLOW_FIRST = (
    "tests/template/test_update.py",
    "tests/production/",
    "tests/template/",
    "tests/e2e/",
    "tests/fuzz/",
    "tests/standalone/",
)
# tests/production/'s modules start clusters of server processes (gunicorn, uvicorn, PostgreSQL, Redis) and
# time their answers: they run in three groups, so three clusters at most run at once (more starve each other on
# two cores) and no group holds up the run. The third is the lightest: test_operating.py is long (Prometheus and
# Alertmanager take their time to page) but mostly waits. A module not named here (a new one) runs in a group of
# its own: add it to the shorter of the first two.
PRODUCTION_GROUPS = {
    "production-1": ("test_make_serve.py", "test_site_mode.py", "test_proxy.py", "test_page_socket.py",
                     "test_deploy_settings.py"),
    "production-2": ("test_two_processes.py", "test_mounted_sandbox.py", "test_database_outage.py"),
    "production-3": ("test_operating.py", "test_redis_outage.py", "test_two_sites_one_redis.py", "test_serving.py"),
}  # fmt: skip
_GROUP_OF_MODULE = {
    f"tests/production/{module}": group for group, modules in PRODUCTION_GROUPS.items() for module in modules
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which writes the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`), a test module runs on one worker, so its module-scoped
    servers and browsers start once; a module or test marked `xdist_group(name)` runs with the rest of
    its group, tests/production/'s modules in PRODUCTION_GROUPS, and every `serial` test in one group (they run
    apart in `make test`, and never beside each other when a whole run is given `-n`). The slow
    folders' modules are handed out first."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    items.sort(key=_hand_out_order)  # stable: within a folder, the collection's order; the quick modules fill the end
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        item.add_marker(pytest.mark.xdist_group(_group(item)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist hands a group out whole only when the worker wrote its name into the node ids: a pytest or
    pytest-xdist that stops doing so (pytest 9.2 with pytest-xdist 3.8, pytest-dev/pytest-xdist#1386) would spread
    every module over every worker, start each module's servers once per worker, and pass, slower. Stop the run."""
    ungrouped = [nodeid for nodeid in ids if "@" not in nodeid.rpartition("]")[2].rpartition("::")[2]]
    if ungrouped and node.config.getvalue("dist") == "loadgroup":
        pytest.exit(
            f"pytest-xdist wrote no group into {len(ungrouped)} node ids (the first: {ungrouped[0]}), so --dist"
            " loadgroup would not keep a module on one worker: pin a pytest and pytest-xdist that do (pyproject.toml's"
            " dev group), then `make lock`.",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


def _hand_out_order(item: pytest.Item) -> int:
    return next((rank for rank, folder in enumerate(SLOW_FIRST) if item.nodeid.startswith(folder)), len(SLOW_FIRST))


def _group(item: pytest.Item) -> str:
    if item.get_closest_marker("serial") is not None:
        return "serial"
    module = item.nodeid.split("::")[0]
    return _GROUP_OF_MODULE.get(module, module)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A SQLite test database in a file, not in shared-cache memory.

    In memory, SQLite locks whole tables between connections and fails at once ("database table
    is locked") instead of waiting; the live-server tests answer requests from several threads
    at the same moment, as a real server does. A file waits (busy timeout) like production.
    """
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database["TEST"] = {**database.get("TEST", {}), "NAME": str(tmp_path_factory.mktemp("db") / "test.sqlite3")}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # test speed only


@pytest.fixture(autouse=True)
def _db_and_fresh_cache(db: None) -> Iterator[None]:
    cache.clear()  # rate-limit counters must not leak from one test into the next
    # The match books as generated: an earlier test's sockets played the simulation's steps on this process's books
    # (a sport's scheduled matches all kicked off, once, after enough of them).
    book.cache_clear()
    yield
    cache.clear()


@pytest.fixture
def clock() -> Iterator[sandbox_clock.ManualClock]:
    manual = sandbox_clock.ManualClock(START)
    previous = sandbox_clock.use_clock(manual)
    yield manual
    sandbox_clock.use_clock(previous)


@pytest.fixture
def account() -> Account:
    return Account.objects.create(name="acme", tier="starter")


@pytest.fixture
def api_key(account: Account) -> str:
    return issue_key(account, "test")[1]


@pytest.fixture
def live_api_key(account: Account) -> str:
    return issue_key(account, "live")[1]


@pytest.fixture
def rpc() -> RpcCall:
    """rpc(method, params, credential=..., **headers) -> response envelope, through the real endpoint."""

    def call(method: str, params: Any = None, *, credential: str | None = None, **headers: str) -> dict[str, Any]:
        request = envelope(method, params)
        answer = post_rpc(json.dumps(request), credential, **headers)
        assert answer["id"] == request["id"]
        return answer

    return call


@pytest.fixture(scope="session")
def _asgi_site() -> Iterator[AsgiServer]:
    """The project's ASGI app served by one uvicorn per test process: a start and a stop cost about 0.3 s, and
    the app reads each test's settings, clock and database at every request, as it does in a server of its own."""
    from config.asgi import application

    server = AsgiServer(application)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def asgi_server(
    _asgi_site: AsgiServer, settings: Any, clock: sandbox_clock.ManualClock, transactional_db: None
) -> Iterator[str]:
    """`host:port` of the project's ASGI app (HTTP and WebSocket) on a real socket, on the test clock. What the
    test leaves open is closed after it (WebSockets with 1012), as a server of the test's own would close it."""
    settings.SPORTS_SANDBOX_WS_TICK = 0.02
    yield _asgi_site.address
    _asgi_site.drop_connections()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server started for this test alone, stopped after it."""
    require_redis_server()
    server = RedisServer()
    server.start()
    yield server
    server.stop()
