"""The decision behind the route: reuse the session's token, or mint one upstream.

`mint_for(request, reason)` is what the view calls; everything about the upstream
service goes through the shared SDK client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.views.decorators.debug import sensitive_variables
from rest_framework import status

from mintroute import conf
from mintroute.errors import RouteError
from sportsproxy.errors import SportsAPIError, SportsError, SportsTimeout, SportsUnavailable, UnauthorizedError
from sportsproxy.responses import TokenResponse
from sportsproxy.shared import get_client, get_previous_client

logger = logging.getLogger(__name__)

SESSION_KEY = "mintroute.token"

now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731 - replaced by tests to move time


def mint_for(request: HttpRequest, reason: str | None) -> dict[str, str]:
    """The session's last token while more than half its life is left, else a newly minted one.

    `reason: "unauthorized"` (the browser's token was refused) always mints afresh.
    """
    if reason != "unauthorized":
        reusable = _reusable_token(request.session.get(SESSION_KEY))
        if reusable is not None:
            return reusable
    ttl = conf.token_ttl()
    token_response = mint_upstream(ttl)
    body = token_response.as_json()
    request.session[SESSION_KEY] = {**body, "ttl": ttl}
    return body


def _reusable_token(stored: Any) -> dict[str, str] | None:
    try:
        expires_at = datetime.fromisoformat(stored["expiresAt"])
        half_life = timedelta(seconds=stored["ttl"] / 2)
        token = stored["token"]
    except (TypeError, KeyError, ValueError):
        return None
    if expires_at - now() <= half_life:
        return None
    return {"token": token, "expiresAt": stored["expiresAt"]}


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
        logger.error("Cannot mint: %s", error)
        raise RouteError(status.HTTP_502_BAD_GATEWAY, "upstream_unauthorized", str(error)) from None
    except SportsError as error:
        raise _upstream_failure(error) from None


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
