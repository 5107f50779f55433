"""Riding through an outage: when a mint fails for a reason on the service's side, the caller is
answered the token it would have been handed while that was fresh, if it still has more than
LEAST_LIFE_LEFT to live: this login's (the cookie's record) in "login" mode, the site's in "site"
mode. A minute of service outage then costs no user a 503 while a token with minutes of life is at
hand. Never for reason "unauthorized" (the caller says that token no longer works) and never after
`upstream_unauthorized` (the site's key is refused: it must be fixed, not hidden).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.http import HttpRequest

from mintroute import reuse, sharing
from mintroute.admission import Admission
from mintroute.errors import RouteError

logger = logging.getLogger(__name__)

RIDDEN_THROUGH = frozenset({"upstream_unavailable", "upstream_timeout", "upstream_error", "upstream_rate_limited"})
LEAST_LIFE_LEFT = timedelta(seconds=60)


def ride_through(refusal: RouteError, request: HttpRequest, admission: Admission) -> dict[str, str]:
    """The held token instead of `refusal` when the rules allow it; else raises `refusal`.

    Reads the cache in "site" mode: the ASGI entry calls it through sync_to_async.
    """
    if refusal.error_code not in RIDDEN_THROUGH or admission.reason == "unauthorized":
        raise refusal
    held = _held(request, admission)
    if held is None:
        raise refusal
    token, expires_at = held
    left = expires_at - reuse.now()
    if left <= LEAST_LIFE_LEFT:
        raise refusal
    logger.warning(
        "Mint failed (%s); answering the %s token instead, %d s left",
        refusal.error_code,
        "site's" if admission.shared else "login's",
        left.total_seconds(),
    )
    return {"token": token, "expiresAt": expires_at.isoformat()}


def _held(request: HttpRequest, admission: Admission) -> tuple[str, datetime] | None:
    if admission.shared:
        site = sharing.held_token()
        return None if site is None else (site.token, site.expires_at)
    stored = reuse.remembered_token(request, admission.login)
    if stored is None:
        return None
    try:
        expires_at = datetime.fromisoformat(stored["expiresAt"])
    except (KeyError, TypeError, ValueError):
        return None
    return (str(stored["token"]), expires_at) if expires_at.tzinfo is not None else None
