"""A bound on a wait for a socket's answer, kept by the client: one thread per process that shuts down
the socket of any watched wait still going at its deadline.

The waiting thread is blocked in libpq or psycopg, which have no read timeout of their own; shutting
its socket down makes that blocked read see the end of the connection at once, and the wait raises.
Shutting down, not closing: a closed descriptor could be reused under libpq by another connection.
The cut is made under the lock a wait ends with, so a wait that has ended is never cut, whatever
its socket has become since.

A wait costs an entry in a dictionary, not a thread or a timer: the route makes a few per request.
The thread wakes every `tick` seconds while the process lives, so a wait is cut at most that late.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

TICK_SECONDS = 0.1


@dataclass
class _Wait:
    deadline: float
    socket: int
    cut: bool = False


class Watchdog:
    def __init__(self, tick: float = TICK_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.tick = tick
        self.clock = clock
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a lock held at the fork would never be released

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[int, _Wait] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, socket_fd: int, seconds: float) -> Iterator[None]:
        """Run the block, shutting `socket_fd` down if the block is still running `seconds` from now.
        An exception the block raises after the cut is raised as TimeoutError's `WaitCut` beside it."""
        token = next(self._tokens)
        with self._lock:
            self._waits[token] = _Wait(self.clock() + seconds, socket_fd)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="database-answers", daemon=True)
                self._thread.start()
        try:
            yield
        except Exception as error:
            if self._forget(token):
                raise WaitCut(seconds) from error
            raise
        finally:
            self._forget(token)

    def _forget(self, token: int) -> bool:
        """Stop watching the wait; whether it was cut."""
        with self._lock:
            wait = self._waits.pop(token, None)
        return wait is not None and wait.cut

    def _watch(self) -> None:
        while True:
            time.sleep(self.tick)
            self.cut_overdue()

    def cut_overdue(self) -> None:
        """Shut down the socket of every watched wait past its deadline (the thread's round, every tick)."""
        now = self.clock()
        with self._lock:
            for wait in self._waits.values():
                if not wait.cut and wait.deadline <= now:
                    wait.cut = True
                    shut_down(wait.socket)


class WaitCut(TimeoutError):
    """A watched wait got no answer within its bound; its socket was shut down."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s: the connection was cut")
        self.seconds = seconds


def shut_down(socket_fd: int) -> None:
    """End both directions of the socket `socket_fd` (through a duplicate: the descriptor stays its owner's)."""
    try:
        with socket.socket(fileno=os.dup(socket_fd)) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by its peer, or not a socket any more: nothing waits on it
