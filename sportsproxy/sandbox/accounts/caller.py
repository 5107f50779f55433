"""Who is calling: the identity every method receives once a credential is verified."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class Caller:
    """An authenticated API key or JWT, with what it inherited from its account."""

    kind: Literal["api_key", "token"]
    account_id: str
    key_id: str
    tier: str
    rate_class: str
    env: str
    expires_at: datetime | None  # None for API keys: they live until revoked
    # An API key's account's own requests-per-minute quota, read with the key (a token's is read from
    # the cache when it spends: its claims cannot carry a quota the dashboard may change at any moment).
    requests_per_minute: int | None = None
    token_id: str | None = None  # a token's `jti`: what an early end (tokens.expire_early) names
