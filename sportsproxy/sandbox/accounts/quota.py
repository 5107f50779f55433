"""The account's requests-per-minute quota, shared by all its keys and tokens.

A fixed one-minute window counted in the Django cache: with a shared cache (Redis)
every process spends the same quota. The limit is the account's own `requests_per_minute`
when the dashboard set one, else its rate class's; it is read on every request, so a change
is in force at once (the requests already counted in the minute still count).
"""

from __future__ import annotations

import math

from django.core.cache import cache

from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.accounts.counters import add_to_counter
from sportsproxy.sandbox.errors import RATE_LIMITED, RpcError
from sportsproxy.sandbox.models import Account

WINDOW_SECONDS = 60


def spend_request(caller: Caller) -> None:
    """Count one request against the caller's account; `rate_limited` once the minute is spent."""
    limit = requests_per_minute(caller)
    now = clock.now().timestamp()
    window = int(now // WINDOW_SECONDS)
    key = _counter_key(caller.account_id, window)
    used = add_to_counter(key, 1, timeout=WINDOW_SECONDS * 2) or 1
    if used > limit:
        retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        raise RpcError(
            RATE_LIMITED,
            f"Requests-per-minute limit of {limit} for this account is spent; retry in {retry_after} s.",
            {"retryAfter": retry_after, "limit": "requests_per_minute"},
        )


def requests_per_minute(caller: Caller) -> int:
    """The caller's account's quota: its own override, else that of the caller's rate class."""
    if caller.quota_read:
        override = caller.requests_per_minute
    else:
        override = (
            Account.objects.filter(public_id=caller.account_id).values_list("requests_per_minute", flat=True).first()
        )
    return override if override is not None else conf.rate_class(caller.rate_class).requests_per_minute


def requests_used(account_id: str) -> int:
    """Requests the account has spent in the current minute (what tests and benchmarks count)."""
    window = int(clock.now().timestamp() // WINDOW_SECONDS)
    return int(cache.get(_counter_key(account_id, window), 0))


def _counter_key(account_id: str, window: int) -> str:
    return f"sandbox:rpm:{account_id}:{window}"
