"""config/drain.py: the drain's length, read from WEB_DRAIN_SECONDS. The drain itself runs under real
servers: tests/production/test_make_serve.py (SIGTERM to `make serve`) and test_two_processes.py (a rolling
restart behind nginx)."""

from __future__ import annotations

import pytest

from config.drain import DEFAULT_DRAIN_SECONDS, DRAIN_REFUSAL, drain_seconds


def test_the_drain_is_5_s_unless_set() -> None:
    assert DEFAULT_DRAIN_SECONDS == 5
    assert drain_seconds({}) == drain_seconds({"WEB_DRAIN_SECONDS": " "}) == 5
    assert drain_seconds({"WEB_DRAIN_SECONDS": "0"}) == 0
    assert drain_seconds({"WEB_DRAIN_SECONDS": "1.5"}) == 1.5


@pytest.mark.parametrize("written", ["five", "-1", "301", "nan", "inf", "5s"])
def test_a_drain_that_is_not_seconds_in_range_is_refused_with_what_to_write(written: str) -> None:
    with pytest.raises(ValueError, match=r"^WEB_DRAIN_SECONDS must be") as refused:
        drain_seconds({"WEB_DRAIN_SECONDS": written})
    assert str(refused.value) == DRAIN_REFUSAL
    assert DRAIN_REFUSAL.startswith("WEB_DRAIN_SECONDS must be a number of seconds from 0 to 300, such as 5")
