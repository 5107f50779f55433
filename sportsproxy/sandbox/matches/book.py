"""Deterministic sandbox match data, and its listing with cursor pagination.

Each environment (live, test) has its own book of matches generated from a fixed seed:
the same ids, teams and scores in every process, so tests and two-process setups agree.
Kick-off times are offsets from an anchor (the hour the book was built), so some
matches are always finished, some live and some scheduled.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sportsproxy import service
from sportsproxy.sandbox import clock
from sportsproxy.sandbox.errors import invalid_params

SPORTS = service.SPORTS  # the service's sports, written once
MATCHES_PER_SPORT = 24
LIVE_PER_SPORT = 4

_COMPETITIONS = {
    "football": ("Premier Division", "Continental Cup"),
    "basketball": ("Pro League", "Winter Classic"),
    "tennis": ("Hardcourt Open", "Clay Masters"),
    "ice-hockey": ("Northern League", "Frozen Cup"),
    "baseball": ("Major Circuit", "Summer Series"),
    "esports": ("Arena Championship", "Online Masters"),
}
_SIDES = {
    "football": (
        "Riverside FC",
        "Harbour United",
        "Northgate City",
        "Elm Park Rovers",
        "Kingsbridge Athletic",
        "Westfield Town",
        "Lakeside Wanderers",
        "Old Mill Albion",
    ),
    "basketball": (
        "Summit Hawks",
        "Bay Tigers",
        "Metro Comets",
        "Canyon Suns",
        "Capital Owls",
        "Delta Storm",
        "Prairie Kings",
        "Coastline Waves",
    ),
    "tennis": (
        "A. Moreau",
        "K. Sato",
        "L. Fischer",
        "M. Okafor",
        "R. Silva",
        "S. Novak",
        "T. Lindqvist",
        "Y. Haddad",
    ),
    "ice-hockey": (
        "Glacier Bears",
        "Fjord Wolves",
        "Pine Ridge Lynx",
        "Iron Bay Pike",
        "Aurora Elks",
        "Granite Falcons",
        "Tundra Foxes",
        "Polar Rams",
    ),
    "baseball": (
        "Valley Pioneers",
        "Harbor Mariners",
        "Desert Scorpions",
        "Copper Miners",
        "Bayou Herons",
        "Redwood Giants",
        "Sunset Pilots",
        "Maple Barons",
    ),
    "esports": (
        "Team Nebula",
        "Pixel Foxes",
        "Void Runners",
        "Echo Gaming",
        "Quantum Five",
        "Neon Syndicate",
        "Zero Latency",
        "Crit Happens",
    ),
}


@dataclass
class Match:
    id: str
    sport: str
    env: str
    competition: str
    home: str
    away: str
    starts_at: datetime
    status: str
    score_home: int
    score_away: int
    updated_at: datetime
    ordinal: int = field(default=0)  # position in the book's fixed order; what cursors point at

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sport": self.sport,
            "env": self.env,
            "competition": self.competition,
            "home": self.home,
            "away": self.away,
            "startsAt": self.starts_at.isoformat(),
            "status": self.status,
            "score": {"home": self.score_home, "away": self.score_away},
            "updatedAt": self.updated_at.isoformat(),
        }


def _generate(env: str, anchor: datetime) -> list[Match]:
    matches: list[Match] = []
    for sport in SPORTS:
        rng = random.Random(f"sports-sandbox:{env}:{sport}")  # noqa: S311 - reproducible data, not secrets
        for number in range(MATCHES_PER_SPORT):
            if number < LIVE_PER_SPORT:
                offset_minutes, status = -rng.randrange(5, 100), "live"
            elif rng.random() < 0.4:
                offset_minutes, status = -rng.randrange(180, 72 * 60), "finished"
            else:
                offset_minutes, status = rng.randrange(30, 96 * 60), "scheduled"
            home, away = rng.sample(_SIDES[sport], 2)
            scored = status != "scheduled"
            starts_at = anchor + timedelta(minutes=offset_minutes)
            matches.append(
                Match(
                    id=f"{env}-{sport}-{number + 1:03d}",
                    sport=sport,
                    env=env,
                    competition=rng.choice(_COMPETITIONS[sport]),
                    home=home,
                    away=away,
                    starts_at=starts_at,
                    status=status,
                    score_home=rng.randrange(0, 5) if scored else 0,
                    score_away=rng.randrange(0, 5) if scored else 0,
                    updated_at=min(anchor, starts_at),
                )
            )
    matches.sort(key=lambda match: (match.starts_at, match.id))
    for ordinal, match in enumerate(matches):
        match.ordinal = ordinal
    return matches


@cache
def book(env: str) -> list[Match]:
    """The environment's matches in their fixed order, built once per process."""
    anchor = clock.now().replace(minute=0, second=0, microsecond=0)
    return _generate(env, anchor)


@dataclass(frozen=True)
class Page:
    matches: list[Match]
    limit: int
    total: int
    next_cursor: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "data": [match.as_json() for match in self.matches],
            "pagination": {"limit": self.limit, "total": self.total, "nextCursor": self.next_cursor},
        }


def list_matches(env: str, *, sports: list[str] | None, limit: int, cursor: str | None) -> Page:
    """One page of the environment's matches of `sports` (all when None), after `cursor`."""
    wanted = set(sports) if sports is not None else set(SPORTS)
    selected = [match for match in book(env) if match.sport in wanted]
    after = _decode_cursor(cursor) if cursor is not None else -1
    remaining = [match for match in selected if match.ordinal > after]
    page = remaining[:limit]
    has_more = len(remaining) > limit
    return Page(
        matches=page,
        limit=limit,
        total=len(selected),
        next_cursor=_encode_cursor(page[-1].ordinal) if has_more else None,
    )


def _encode_cursor(ordinal: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": ordinal}).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        after = json.loads(base64.urlsafe_b64decode(padded.encode()))["after"]
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeError):
        after = None
    if type(after) is not int or after < 0:
        raise invalid_params("cursor is not one this service issued; use pagination.nextCursor as returned.")
    return after
