"""The decision behind the route: reuse the session's token, or mint one upstream.

`mint_for(request, reason)` is what the view calls; everything about the upstream
service goes through the shared SDK client.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.debug import sensitive_variables
from rest_framework import status

from mintroute import conf
from mintroute.errors import RouteError
from sportsproxy.django.checks import SettingsError
from sportsproxy.django.shared import get_client, get_previous_client
from sportsproxy.errors import SportsAPIError, SportsError, SportsTimeout, SportsUnavailable, UnauthorizedError
from sportsproxy.responses import TokenResponse

logger = logging.getLogger(__name__)

# The last minted token is remembered in a signed, HttpOnly cookie bound to the user, not in
# the session: reusing it then costs no database write and no cache operation.
TOKEN_COOKIE = "sports_token"  # noqa: S105 - a cookie name, not a secret
TOKEN_COOKIE_SALT = "mintroute.token"  # noqa: S105 - a namespace for the signature

now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731 - replaced by tests to move time


@dataclass(frozen=True)
class Minting:
    body: dict[str, str]  # the answer: {"token", "expiresAt"}
    minted_ttl: int | None  # set when the token is new and should be remembered


def mint_for(request: HttpRequest, reason: str | None) -> Minting:
    """The browser's last token while more than half its life is left, else a newly minted one.

    `reason: "unauthorized"` (the browser's token was refused) always mints afresh.
    """
    if reason != "unauthorized":
        stored = remembered_token(request)
        if stored is not None and _more_than_half_left(stored):
            return Minting({"token": stored["token"], "expiresAt": stored["expiresAt"]}, None)
    try:
        ttl = conf.token_ttl()
    except ImproperlyConfigured as error:
        raise _misconfigured(error) from None
    return Minting(mint_upstream(ttl).as_json(), ttl)


def remember_token(response: HttpResponseBase, request: HttpRequest, minting: Minting) -> None:
    """Store a newly minted token for reuse by this browser's next calls (any tab)."""
    if minting.minted_ttl is None:
        return
    record = {**minting.body, "ttl": minting.minted_ttl, "user": request.user.pk}
    response.set_signed_cookie(
        TOKEN_COOKIE,
        json.dumps(record),
        salt=TOKEN_COOKIE_SALT,
        max_age=minting.minted_ttl,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Strict",
    )


def remembered_token(request: HttpRequest) -> dict[str, Any] | None:
    """The token this browser was last given, if the cookie is intact and belongs to this user."""
    raw = request.get_signed_cookie(TOKEN_COOKIE, default=None, salt=TOKEN_COOKIE_SALT)
    try:
        stored = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(stored, dict) or stored.get("user") != request.user.pk:
        return None
    return stored


def _more_than_half_left(stored: dict[str, Any]) -> bool:
    try:
        expires_at = datetime.fromisoformat(stored["expiresAt"])
        half_life = timedelta(seconds=stored["ttl"] / 2)
    except (TypeError, KeyError, ValueError):
        return False
    return expires_at - now() > half_life


@sensitive_variables()
def mint_upstream(ttl: int) -> TokenResponse:
    """`tokens.create` with the server's key; SDK errors become the route's 502/503/504 answers.

    During a key rotation, a refusal of SPORTS_API_KEY is retried once with SPORTS_API_KEY_PREVIOUS.
    """
    try:
        try:
            return get_client().tokens.create(ttl=ttl)
        except UnauthorizedError:
            previous = get_previous_client()
            if previous is None:
                raise
            logger.warning(
                "Key rotation: SPORTS_API_KEY was refused, minted with SPORTS_API_KEY_PREVIOUS instead. "
                "Check that the new key is active before revoking the old one."
            )
            return previous.tokens.create(ttl=ttl)
    except ImproperlyConfigured as error:
        raise _misconfigured(error) from None
    except SportsError as error:
        raise _upstream_failure(error) from None


def _misconfigured(error: ImproperlyConfigured) -> RouteError:
    """A site whose settings cannot mint: a clear 502 (never a 500), logged; `manage.py check` says the same."""
    logger.error("Cannot mint: %s", error)
    key_problem = isinstance(error, SettingsError) and error.problem.setting.startswith("SPORTS_API_KEY")
    return RouteError(
        status.HTTP_502_BAD_GATEWAY, "upstream_unauthorized" if key_problem else "upstream_error", str(error)
    )


def _upstream_failure(error: SportsError) -> RouteError:
    code = error.code if isinstance(error, SportsAPIError) else type(error).__name__
    logger.warning("Mint failed upstream: %s (request id %s): %s", code, error.request_id, error.message)
    if isinstance(error, UnauthorizedError):
        return RouteError(
            status.HTTP_502_BAD_GATEWAY,
            "upstream_unauthorized",
            "The sports service refused this site's API key (unknown or revoked). "
            "Set SPORTS_API_KEY to an active key from the dashboard.",
        )
    if isinstance(error, SportsTimeout):
        return RouteError(
            status.HTTP_504_GATEWAY_TIMEOUT,
            "upstream_timeout",
            "The sports service did not answer within SPORTS_TIMEOUT. Retry shortly.",
        )
    if isinstance(error, SportsUnavailable):
        return RouteError(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "upstream_unavailable",
            "The sports service could not be reached. Check SPORTS_BASE_URL and retry shortly.",
            {"Retry-After": "5"},
        )
    return RouteError(
        status.HTTP_502_BAD_GATEWAY,
        "upstream_error",
        f"The sports service answered with an error ({code}) instead of a token.",
    )
