"""Sandbox match events: live matches change score and status as (sandbox) time passes.

Time is cut into steps of SPORTS_SANDBOX_EVENT_INTERVAL seconds. Each step changes one
live match per sport and environment, chosen by a generator seeded with the step. A step is
claimed in the cache before it is applied, so with a shared cache (Redis) only one process plays
it. `due_events()` plays the steps the clock has reached; realtime/publisher.py sends the events
to the sockets.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.conf import ENVIRONMENTS
from sportsproxy.sandbox.matches.book import SPORTS, Match, book

MAX_CATCH_UP_STEPS = 3  # after a long pause, publish the latest steps only
FINISH_CHANCE = 0.1


@dataclass(frozen=True)
class MatchEvent:
    kind: str  # "score" or "status"
    match: dict[str, Any]


def current_step() -> int:
    return int(clock.now().timestamp() // conf.event_interval())


def play_step(env: str, step: int) -> list[MatchEvent]:
    """Apply one step to the environment's book (deterministic in `env` and `step`)."""
    rng = random.Random(f"sports-sandbox-events:{env}:{step}")  # noqa: S311 - reproducible, not secret
    matches = book(env)
    events: list[MatchEvent] = []
    for sport in SPORTS:
        live = [match for match in matches if match.sport == sport and match.status == "live"]
        if not live:
            continue
        match = rng.choice(live)
        upcoming = [m for m in matches if m.sport == sport and m.status == "scheduled"]
        if upcoming and rng.random() < FINISH_CHANCE:
            # A match ends only when the next one can kick off, so every sport stays live.
            events.append(_set_status(match, "finished"))
            events.append(_set_status(min(upcoming, key=lambda m: (m.starts_at, m.id)), "live"))
        else:
            if rng.random() < 0.5:
                match.score_home += 1
            else:
                match.score_away += 1
            match.updated_at = clock.now()
            events.append(MatchEvent("score", match.as_json()))
    return events


def _set_status(match: Match, status: str) -> MatchEvent:
    match.status = status
    match.updated_at = clock.now()
    return MatchEvent("status", match.as_json())


_last_step: int | None = None


def due_events() -> dict[str, list[MatchEvent]]:
    """Play the steps the clock has reached since the last call, each claimed once across processes."""
    global _last_step
    step = current_step()
    if _last_step is None or step < _last_step:  # first run, or the clock was set back (tests)
        _last_step = step - 1
    first = max(_last_step + 1, step - MAX_CATCH_UP_STEPS + 1)
    _last_step = step
    due: dict[str, list[MatchEvent]] = {env: [] for env in ENVIRONMENTS}
    for number in range(first, step + 1):
        for env in ENVIRONMENTS:
            if cache.add(f"sandbox:events:{env}:{number}", True, timeout=3600):
                due[env].extend(play_step(env, number))
    return due
