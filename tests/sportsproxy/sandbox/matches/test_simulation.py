"""The event simulation: deterministic steps that keep every sport live."""

from __future__ import annotations

import pytest

from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.matches import simulation
from sportsproxy.sandbox.matches.book import _generate


def test_every_sport_stays_live_however_long_the_simulation_runs(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    private_book = _generate("test", clock.now())
    monkeypatch.setattr(simulation, "book", lambda env: private_book)
    for step in range(2000):
        simulation.play_step("test", step)
    for sport in simulation.SPORTS:
        assert any(match.sport == sport and match.status == "live" for match in private_book)


def test_the_same_step_plays_the_same_change(clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _generate("live", clock.now()), _generate("live", clock.now())
    for private_book in (first, second):
        monkeypatch.setattr(simulation, "book", lambda env, copy=private_book: copy)
        events = simulation.play_step("live", 7)
        assert len(events) >= len(simulation.SPORTS)
    assert [match.as_json() for match in first] == [match.as_json() for match in second]
    assert first != _generate("live", clock.now())  # the step changed something


def test_each_step_is_claimed_once_and_catch_up_is_bounded(clock: ManualClock, settings: object) -> None:
    simulation._last_step = None
    first = simulation.due_events()
    assert sum(len(events) for events in first.values()) >= 2  # the current step, both environments
    assert simulation.due_events() == {"live": [], "test": []}  # the same step is not played twice
    clock.advance(simulation.conf.event_interval() * 50)
    later = simulation.due_events()
    played = {event.match["updatedAt"] for events in later.values() for event in events}
    assert played == {clock.now().isoformat()}
    assert (
        sum(len(events) for events in later.values()) <= 2 * simulation.MAX_CATCH_UP_STEPS * len(simulation.SPORTS) * 2
    )
