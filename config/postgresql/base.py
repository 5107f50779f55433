"""Django's PostgreSQL backend, except that the site bounds every wait for an answer on an open
connection itself.

PostgreSQL's `statement_timeout` (DATABASE_STATEMENT_TIMEOUT, config/database.py) ends a slow
statement on the server and keeps the connection. It cannot end a wait for a server that never got
the statement: a network partition after the connection was made, or a proxy in front of
PostgreSQL (PgBouncer, HAProxy, a cloud's) that accepts and acknowledges the bytes and never
answers. TCP does not end that wait either when such a proxy acknowledges every byte and answers
keepalives, and neither libpq nor psycopg has a read timeout. A new connection is bounded by libpq's
`connect_timeout`; a connection made before the partition (a persistent one, CONN_MAX_AGE, or one
made earlier in the same request) needs a bound of the client's own.

So every wait on an open connection is watched (config/postgresql/watchdog.py): each statement
(Django's execute wrapper), each fetch and the closing of a server-side cursor
(`QuerySet.iterator()`), each commit and rollback, the health check and the set-up after
connecting. One still waiting `OPTIONS["answer_timeout"]` seconds after it began has its socket
shut down: libpq sees the connection end, the connection is closed, and the wait raises
OperationalError saying so. The bound is the statement timeout and half a second, so a slow
statement is ended by the server first, cleanly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS
from django.db import Error as DjangoDatabaseError
from django.db import OperationalError as DjangoOperationalError
from django.db.backends.postgresql import base

from config.database import ANSWER_TIMEOUT
from config.postgresql.watchdog import WaitCut, Watchdog

WATCHDOG = Watchdog()


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, settings_dict: dict[str, Any], alias: str = DEFAULT_DB_ALIAS) -> None:
        super().__init__(settings_dict, alias)
        self.execute_wrappers.append(self._answered_execute)

    def get_connection_params(self) -> dict[str, Any]:
        params: dict[str, Any] = super().get_connection_params()
        params.pop(ANSWER_TIMEOUT, None)  # the client's, not libpq's
        return params

    @contextmanager
    def answered_in_time(self) -> Iterator[None]:
        """Run the block, cutting the connection if PostgreSQL has not answered within its bound."""
        seconds = self.settings_dict["OPTIONS"].get(ANSWER_TIMEOUT)
        socket_fd = self._socket()
        if not seconds or socket_fd is None:
            yield
            return
        try:
            with WATCHDOG.watching(socket_fd, seconds):
                yield
        except WaitCut as cut:
            # Closed at once, so that Django takes it for a connection lost: inside a transaction it then
            # neither rolls back on it nor opens a new one to restore autocommit (each a wait of its own).
            self.close()
            raise no_answer(cut) from cut.__cause__

    def _socket(self) -> int | None:
        """The open connection's socket, or None (no connection, or one already lost: it fails at once)."""
        if self.connection is None:
            return None
        try:
            return int(self.connection.fileno())
        except psycopg.Error:
            return None

    def _answered_execute(self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: Any) -> Any:
        with self.answered_in_time():
            return execute(sql, params, many, context)

    def _commit(self) -> Any:
        with self.answered_in_time():
            return super()._commit()  # type: ignore[misc]  # Django's, absent from django-stubs

    def _rollback(self) -> Any:
        with self.answered_in_time():
            return super()._rollback()  # type: ignore[misc]  # Django's, absent from django-stubs

    def is_usable(self) -> bool:
        with self.answered_in_time():
            return bool(super().is_usable())

    def init_connection_state(self) -> None:
        with self.answered_in_time():
            super().init_connection_state()

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = super().create_cursor(name)
        return ServerSideCursorAnswered(cursor, self) if name else cursor


class ServerSideCursorAnswered:
    """A server-side cursor whose fetches and close, each a round trip, are answered in time (its
    DECLARE is a statement: the execute wrapper watches it)."""

    def __init__(self, cursor: Any, database: DatabaseWrapper) -> None:
        self.cursor = cursor
        self.database = database

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)

    def __iter__(self) -> Iterator[Any]:
        while rows := self.fetchmany(self.cursor.itersize):
            yield from rows

    def fetchone(self) -> Any:
        with self.database.answered_in_time():
            return self.cursor.fetchone()

    def fetchmany(self, size: int = 0) -> list[Any]:
        with self.database.answered_in_time():
            return list(self.cursor.fetchmany(size))

    def fetchall(self) -> list[Any]:
        with self.database.answered_in_time():
            return list(self.cursor.fetchall())

    def close(self) -> None:
        with self.database.answered_in_time():
            self.cursor.close()


def no_answer(cut: WaitCut) -> Exception:
    """The error a cut wait raises, of the kind its caller expects (Django's, or psycopg's for Django to wrap)."""
    message = (
        f"PostgreSQL did not answer within {cut.seconds:g} s (a network partition, or a proxy in front of it "
        "that answers for it): the connection was cut"
    )
    if isinstance(cut.__cause__, DjangoDatabaseError):
        return DjangoOperationalError(message)
    return psycopg.OperationalError(message)
