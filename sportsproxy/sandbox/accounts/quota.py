"""The account's requests-per-minute quota, shared by all its keys and tokens.

A fixed one-minute window counted in the Django cache: with a shared cache (Redis)
every process spends the same quota. The limit is the account's own `requests_per_minute`
when the dashboard set one, else its rate class's; it is read on every request, so a change
is in force at once (the requests already counted in the minute still count).

An API key's request reads the account with the key. A token's request reads no database while
the cache holds the quota's mirror, which every change of an account writes (`mirror_quota`):
NO_QUOTA when the account has no quota of its own, so that "no quota" and "no mirror" differ. When
the cache has lost the mirror (a Redis restart, a flush, an eviction), the next token request
reads the quota back from the database and writes the mirror again; if the database is away
too, that request counts against the token's rate class (a token keeps working meanwhile).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.core.cache import cache
from django.db import DatabaseError
from django.db.models.signals import post_save
from django.dispatch import receiver

from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.accounts.counters import add_to_counter
from sportsproxy.sandbox.errors import RATE_LIMITED, RpcError
from sportsproxy.sandbox.models import Account

WINDOW_SECONDS = 60
NO_QUOTA = -1  # the mirror of an account without a quota of its own (a missing mirror is read back)

logger = logging.getLogger(__name__)


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
    override = caller.requests_per_minute if caller.kind == "api_key" else account_quota(caller.account_id)
    return override if override is not None else conf.rate_class(caller.rate_class).requests_per_minute


def account_quota(account_id: str) -> int | None:
    """The account's own quota for a token's request (None: its class's): the mirror, else the database's."""
    mirrored = cache.get(_quota_key(account_id))
    if isinstance(mirrored, int) and mirrored >= NO_QUOTA:
        return None if mirrored == NO_QUOTA else mirrored
    try:
        own = Account.objects.filter(public_id=account_id).values_list("requests_per_minute", flat=True).first()
    except DatabaseError:
        logger.warning("The quota of account %s is in neither the cache nor a reachable database.", account_id)
        return None
    # add, not set: a change of the account mirrored meanwhile is newer than this read
    cache.add(_quota_key(account_id), NO_QUOTA if own is None else own, timeout=None)
    return own


def mirror_quota(account_id: str, requests_per_minute: int | None) -> None:
    """Write the account's own quota (or NO_QUOTA) where a token's request reads it."""
    cache.set(_quota_key(account_id), NO_QUOTA if requests_per_minute is None else requests_per_minute, timeout=None)


def mirror_all_quotas() -> None:
    """Mirror every account's own quota (at a server's start: the cache may be new)."""
    for public_id, value in Account.objects.exclude(requests_per_minute=None).values_list(
        "public_id", "requests_per_minute"
    ):
        mirror_quota(public_id, value)


@receiver(post_save, sender=Account)
def _mirror_on_save(sender: Any, instance: Account, **kwargs: Any) -> None:
    mirror_quota(instance.public_id, instance.requests_per_minute)


def _quota_key(account_id: str) -> str:
    return f"sandbox:rpm-quota:{account_id}"


def requests_used(account_id: str) -> int:
    """Requests the account has spent in the current minute (what tests and benchmarks count)."""
    window = int(clock.now().timestamp() // WINDOW_SECONDS)
    return int(cache.get(_counter_key(account_id, window), 0))


def _counter_key(account_id: str, window: int) -> str:
    return f"sandbox:rpm:{account_id}:{window}"
