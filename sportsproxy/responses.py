"""Values the SDK returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict


@dataclass(frozen=True)
class TokenResponse:
    """A minted token. `as_json()` is exactly the body a mint route returns to the browser."""

    token: str = field(repr=False)  # a bearer credential: kept out of logs and tracebacks
    expires_at: datetime

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> TokenResponse:
        """The service's `{token, expiresAt}`; ValueError unless `expiresAt` is an ISO 8601 time with
        a UTC offset (without one it cannot be compared with now, so the token's life is unknown)."""
        expires_at = datetime.fromisoformat(result["expiresAt"])
        if expires_at.tzinfo is None:
            raise ValueError("expiresAt has no UTC offset")
        return cls(token=result["token"], expires_at=expires_at)

    def as_json(self) -> dict[str, str]:
        return {"token": self.token, "expiresAt": self.expires_at.isoformat()}


class Score(TypedDict):
    home: int
    away: int


class Match(TypedDict):
    id: str
    sport: str
    env: str
    competition: str
    home: str
    away: str
    startsAt: str
    status: str
    score: Score
    updatedAt: str


@dataclass(frozen=True)
class MatchPage:
    """One page of `matches.list`; pass `next_cursor` back as `cursor` for the next one."""

    data: list[Match]
    limit: int
    total: int
    next_cursor: str | None

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> MatchPage:
        pagination = result["pagination"]
        return cls(
            data=result["data"],
            limit=pagination["limit"],
            total=pagination["total"],
            next_cursor=pagination["nextCursor"],
        )
