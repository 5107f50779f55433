"""Minting upstream: `tokens.create` with the server's key through the shared SDK client, with
the service's failures turned into the route's answers (502, 503, 504). The sync and the async
entry of the route call the twin functions below; both map failures with `upstream_failure`.

During a key rotation, a refusal of SPORTS_API_KEY is retried once with SPORTS_API_KEY_PREVIOUS.
"""

from __future__ import annotations

import logging
import math

from django.core.exceptions import ImproperlyConfigured
from django.views.decorators.debug import sensitive_variables

from mintroute.errors import RouteError, for_caller, misconfigured
from mintroute.metrics import upstream_call
from sportsproxy.django.shared import (
    get_async_client,
    get_client,
    get_previous_async_client,
    get_previous_client,
)
from sportsproxy.errors import (
    RateLimitedError,
    SportsAPIError,
    SportsError,
    SportsTimeout,
    SportsUnavailable,
    UnauthorizedError,
)
from sportsproxy.responses import TokenResponse

logger = logging.getLogger(__name__)

DEFAULT_UPSTREAM_WAIT = 60  # seconds to wait when the service says rate_limited without retryAfter
LONGEST_UPSTREAM_WAIT = 86400  # a longer wait than a day is passed on as a day


@sensitive_variables()
def mint_upstream(ttl: int) -> TokenResponse:
    """A new token of `ttl` seconds; RouteError when the service or the settings cannot give one."""
    try:
        try:
            client = get_client()
            with upstream_call():
                return client.tokens.create(ttl=ttl)
        except UnauthorizedError:
            previous = get_previous_client()
            if previous is None:
                raise
            _log_rotation()
            with upstream_call():
                return previous.tokens.create(ttl=ttl)
    except ImproperlyConfigured as error:
        raise misconfigured(error) from None
    except SportsError as error:
        raise upstream_failure(error) from None
    except Exception:
        raise unexpected_failure() from None


@sensitive_variables()
async def amint_upstream(ttl: int) -> TokenResponse:
    """mint_upstream's async twin, on the running loop's client: no thread waits for the service."""
    try:
        try:
            client = get_async_client()
            with upstream_call():
                return await client.tokens.create(ttl=ttl)
        except UnauthorizedError:
            previous = get_previous_async_client()
            if previous is None:
                raise
            _log_rotation()
            with upstream_call():
                return await previous.tokens.create(ttl=ttl)
    except ImproperlyConfigured as error:
        raise misconfigured(error) from None
    except SportsError as error:
        raise upstream_failure(error) from None
    except Exception:
        raise unexpected_failure() from None


def _log_rotation() -> None:
    logger.warning(
        "Key rotation: SPORTS_API_KEY was refused, minted with SPORTS_API_KEY_PREVIOUS instead. "
        "Check that the new key is active before revoking the old one."
    )


def unexpected_failure() -> RouteError:
    """Anything else the mint raised (a transport of the wrong library, a bug): logged with its
    traceback, answered 502 `upstream_error` (never a 500), so the caller retries with backoff."""
    logger.exception("Mint failed unexpectedly; answering 502 upstream_error")
    return RouteError(502, "upstream_error", "The sports service could not be asked for a token. Retry shortly.")


def upstream_failure(error: SportsError) -> RouteError:
    """The route's answer to a failed `tokens.create`."""
    code = error.code if isinstance(error, SportsAPIError) else type(error).__name__
    logger.warning("Mint failed upstream: %s (request id %s): %s", code, error.request_id, error.message)
    if isinstance(error, UnauthorizedError):
        return RouteError(
            502,
            "upstream_unauthorized",
            for_caller(
                "The sports service refused this site's API key (unknown or revoked). "
                "Set SPORTS_API_KEY to an active key from the dashboard.",
                "The sports service refused this site's credentials.",
            ),
        )
    if isinstance(error, RateLimitedError):
        wait = _whole_seconds(error.retry_after)
        return RouteError(
            503,
            "upstream_rate_limited",
            f"The sports service says this site's quota or limits are spent. Retry in {wait} s.",
            {"Retry-After": str(wait)},
        )
    if isinstance(error, SportsTimeout):
        return RouteError(
            504,
            "upstream_timeout",
            for_caller(
                "The sports service did not answer within SPORTS_TIMEOUT. Retry shortly.",
                "The sports service did not answer in time. Retry shortly.",
            ),
        )
    if isinstance(error, SportsUnavailable):
        return RouteError(
            503,
            "upstream_unavailable",
            for_caller(
                "The sports service could not be reached. Check SPORTS_BASE_URL and retry shortly.",
                "The sports service could not be reached. Retry shortly.",
            ),
            {"Retry-After": "5"},
        )
    return RouteError(502, "upstream_error", f"The sports service answered with an error ({code}) instead of a token.")


def _whole_seconds(retry_after: float | None) -> int:
    """The service's retryAfter rounded up to whole seconds (at most a day); DEFAULT_UPSTREAM_WAIT when
    absent, negative or not a number."""
    if retry_after is None or isinstance(retry_after, bool) or not math.isfinite(retry_after) or retry_after < 0:
        return DEFAULT_UPSTREAM_WAIT
    return min(math.ceil(retry_after), LONGEST_UPSTREAM_WAIT)
