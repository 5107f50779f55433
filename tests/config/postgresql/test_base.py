"""config/postgresql: the site's PostgreSQL backend against the tests' real server, reached through a TCP proxy
that can turn into a black hole (it keeps the connection and acknowledges every byte, and nothing comes back).

The settings config/database.py makes reach the connection; a slow statement is ended by the server and keeps
its connection; a statement, a commit and a server-side cursor's fetch on a connection whose database stops
answering each raise OperationalError at the client's bound instead of waiting for good.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, OperationalError
from django.db.utils import ConnectionHandler

from config.database import database_settings
from tests import stores
from tests.production.cluster import require_engines
from tests.production.tcp_proxy import TcpProxy, postgres_proxy

STATEMENT_SECONDS = 0.3  # the server's bound; the client's is half a second more
ANSWER_SECONDS = STATEMENT_SECONDS + 0.5
WITHIN_SECONDS = 5  # the rule's bound for an answer, whatever the database does


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    require_engines()
    running = postgres_proxy()
    running.start()
    try:
        yield running
    finally:
        running.restore()
        running.stop()


@pytest.fixture
def database(proxy: TcpProxy, django_db_blocker: Any) -> Iterator[Any]:
    """A connection of the backend to the tests' maintenance database, through `proxy` (a handler of its
    own: not the test database pytest-django guards)."""
    url = stores.postgres_url(stores.DATABASE_URL.rpartition("/")[2], port=proxy.port)
    settings = database_settings(url, connect_timeout=2, statement_timeout=STATEMENT_SECONDS)
    connection = ConnectionHandler({"default": settings})["default"]
    try:
        with django_db_blocker.unblock():
            yield connection
    finally:
        proxy.cut()  # frees a call still waiting on it
        connection.close()


def one(database: Any, sql: str) -> Any:
    with database.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


def test_the_settings_reach_the_connection(database: Any) -> None:
    assert one(database, "SHOW statement_timeout") == "300ms"
    parameters = database.connection.info.get_parameters()
    assert parameters["connect_timeout"] == "2"
    assert "answer_timeout" not in parameters  # the client's own, never given to libpq


def test_a_slow_statement_is_ended_by_the_server_and_keeps_its_connection(database: Any) -> None:
    backend = one(database, "SELECT pg_backend_pid()")
    with pytest.raises(OperationalError, match="canceling statement due to statement timeout"):
        one(database, "SELECT pg_sleep(3)")
    assert one(database, "SELECT pg_backend_pid()") == backend


def raised_within(database: Any, call: Callable[[], object]) -> tuple[BaseException, float]:
    """What `call` raised, and after how many seconds; the test fails if it has not ended within the rule's
    bound. It runs in a thread of its own, so that without a bound the test fails instead of waiting with
    it (the proxy's cut at the fixture's end frees the call)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:
            raised.append(error)

    database.inc_thread_sharing()
    started = time.monotonic()
    waiting = threading.Thread(target=run, daemon=True)
    waiting.start()
    waiting.join(WITHIN_SECONDS)
    assert not waiting.is_alive(), f"no answer and no error within {WITHIN_SECONDS} s"
    assert len(raised) == 1, "it answered"
    return raised[0], time.monotonic() - started


def assert_cut(database: Any, call: Callable[[], object]) -> None:
    """`call` raises OperationalError saying its connection was cut, once the client's bound has passed."""
    error, waited = raised_within(database, call)
    assert isinstance(error, OperationalError), error
    assert f"PostgreSQL did not answer within {ANSWER_SECONDS:g} s" in str(error)
    assert waited >= ANSWER_SECONDS


def test_a_statement_on_a_connection_whose_database_stops_answering_is_cut(database: Any, proxy: TcpProxy) -> None:
    one(database, "SELECT 1")  # connected
    proxy.black_hole()
    assert_cut(database, lambda: one(database, "SELECT 1"))
    assert not database.is_usable()  # so Django drops it when the request ends


def test_a_commit_that_is_never_answered_is_cut(database: Any, proxy: TcpProxy) -> None:
    database.set_autocommit(False)
    one(database, "SELECT 1")  # in a transaction
    proxy.black_hole()
    assert_cut(database, database.commit)


def test_a_server_side_cursors_fetch_that_is_never_answered_is_cut(database: Any, proxy: TcpProxy) -> None:
    cursor = database.chunked_cursor()  # QuerySet.iterator()'s: each fetch is a round trip
    try:
        cursor.execute("SELECT generate_series(1, 1000)")
        assert len(cursor.fetchmany(10)) == 10
        proxy.black_hole()
        assert_cut(database, lambda: cursor.fetchmany(10))
    finally:
        proxy.cut()  # frees a fetch still waiting, which holds the connection
        with contextlib.suppress(DatabaseError):
            cursor.close()


def test_a_new_connection_to_a_database_that_never_answers_gives_up_at_its_connect_timeout(
    database: Any, proxy: TcpProxy
) -> None:
    proxy.black_hole()
    error, _ = raised_within(database, database.ensure_connection)
    assert isinstance(error, OperationalError), error
    assert "timeout" in str(error)
