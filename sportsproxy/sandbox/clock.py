"""The sandbox's notion of "now", swappable so tests can move time exactly.

Token expiry, rate windows and last-used stamps all read `now()`; tests install a
`ManualClock` with `use_clock()` instead of sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)


_current: Clock = SystemClock()


def now() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return _current.now()


def use_clock(clock: Clock) -> Clock:
    """Install `clock` and return the previous one (so callers can restore it)."""
    global _current
    previous, _current = _current, clock
    return previous
