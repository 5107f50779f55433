"""config/postgresql/watchdog.py: a watched wait past its bound has its socket shut down, so the blocked read
ends; a wait that ended is never cut. On a real socket pair, with the watchdog's clock moved by the test."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from config.postgresql.watchdog import WaitCut, Watchdog

NEVER = 3600.0  # the watchdog's own thread never takes a round in these tests: each test takes it


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        yield ours, theirs


def read_or_raise(connection: socket.socket) -> bytes:
    """What a driver does: a read that finds the connection ended raises."""
    data = connection.recv(1)
    if not data:
        raise ConnectionError("server closed the connection unexpectedly")
    return data


def test_a_wait_past_its_bound_is_cut_and_says_so(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    clock = Clock()
    watchdog = Watchdog(tick=NEVER, clock=clock)
    with pytest.raises(WaitCut, match=r"no answer within 2\.5 s") as cut:  # noqa: PT012 - the wait is the block
        with watchdog.watching(ours.fileno(), 2.5):
            clock.now += 2.5
            watchdog.cut_overdue()
            read_or_raise(ours)  # nothing was sent: without the cut this would block for good
    assert isinstance(cut.value.__cause__, ConnectionError)


def test_a_wait_within_its_bound_is_left_alone(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, theirs = pair
    clock = Clock()
    watchdog = Watchdog(tick=NEVER, clock=clock)
    with watchdog.watching(ours.fileno(), 2.5):
        clock.now += 2.4
        watchdog.cut_overdue()
        theirs.sendall(b"a")
        assert read_or_raise(ours) == b"a"


def test_a_wait_that_ended_is_never_cut(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, theirs = pair
    clock = Clock()
    watchdog = Watchdog(tick=NEVER, clock=clock)
    with watchdog.watching(ours.fileno(), 2.5):
        pass
    clock.now += 60
    watchdog.cut_overdue()
    theirs.sendall(b"a")
    assert read_or_raise(ours) == b"a"  # the socket still works both ways
    ours.sendall(b"b")
    assert theirs.recv(1) == b"b"


def test_an_error_of_a_wait_that_was_not_cut_is_raised_as_it_is(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    watchdog = Watchdog(tick=NEVER, clock=Clock())
    with pytest.raises(ValueError, match="a refusal"), watchdog.watching(ours.fileno(), 2.5):
        raise ValueError("a refusal")


def test_the_watchdogs_own_thread_cuts_a_blocked_read(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    watchdog = Watchdog(tick=0.05)
    with pytest.raises(WaitCut), watchdog.watching(ours.fileno(), 0.2):
        read_or_raise(ours)
