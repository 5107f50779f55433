"""Site mode (SPORTS_TOKEN_SHARING = "site"): one token for every caller, minted once per half-life.

The service's tokens carry no user: every token minted with the site's key has the key's powers and
nothing else. So in site mode the route keeps one token, the site's, in the cache every process
shares (the one the rate limits count in), and answers it to every admitted caller while more than
half its ttl is left.

Single flight: a caller that finds the site's token stale takes a lock in the cache (`add`: one
caller in one process wins) and mints; the others poll the cache until the new token lands, the
holder's failure is written there (they share it), or the lock is gone (its holder died: the lock
expires on its own once the longest mint is over). Every wait is bounded.

`reason: "unauthorized"` replaces the site's token; for REPLACEMENT_WINDOW after a replacement,
other `unauthorized` callers get the replacement instead of minting again.

If the cache cannot be reached, the caller gets a token minted for it alone (not shared, not
stored): the route's rate limits count in the same cache and have just let the request through, so
the outage is brief, and the caller is answered instead of refused.

The rules are written once, as a plan (`_flight`) that yields what it needs done: a cache
operation, a pause, the mint. `site_token` runs the plan with blocking calls (WSGI), `asite_token`
on the event loop (ASGI): the twins differ only in how they wait.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeGuard

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import BaseCache, caches
from django.core.exceptions import ImproperlyConfigured
from django.utils.crypto import salted_hmac

from mintroute import reuse
from mintroute.errors import RouteError
from sportsproxy.django import conf as sdk_conf
from sportsproxy.service import longest_call_seconds

logger = logging.getLogger(__name__)

REPLACEMENT_WINDOW = timedelta(seconds=10)  # other `unauthorized` callers get the replacement
POLL_SECONDS = 0.02  # how often a waiting caller looks for the token being minted
LOCK_MARGIN_SECONDS = 2  # beyond the longest mint, before a dead holder's lock expires
FAILURE_SECONDS = 5  # how long a failed flight's answer stays for the callers that waited on it

monotonic: Callable[[], float] = time.monotonic  # replaced by tests to move the bounds' clock


@dataclass(frozen=True)
class SiteToken:
    """The site's token as the cache keeps it."""

    token: str
    expires_at: datetime
    ttl: int
    minted_at: datetime
    replacement: bool  # minted for reason "unauthorized"

    def answer(self) -> dict[str, str]:
        return {"token": self.token, "expiresAt": self.expires_at.isoformat()}

    def left(self) -> timedelta:
        return self.expires_at - reuse.now()


class StoreUnavailable(Exception):
    """The cache that holds the site's token could not be reached."""


# --- What the plan asks its runner to do ---------------------------------------------------


@dataclass(frozen=True)
class Store:
    """A cache operation, run in a thread by the async runner."""

    call: Callable[[], Any]


@dataclass(frozen=True)
class Pause:
    seconds: float


class Mint:
    """Mint a token upstream; the runner sends back `{token, expiresAt}` or throws the RouteError."""


MINT = Mint()
Step = Store | Pause | Mint
Plan = Generator[Step, Any, dict[str, str]]


# --- The runners ----------------------------------------------------------------------------


def site_token(ttl: int, reason: str | None, mint: Callable[[], dict[str, str]]) -> dict[str, str]:
    """The site's token for an admitted caller, minted by at most one caller at a time; RouteError
    when the mint fails (the view may then ride through with `held_token`)."""
    plan = _flight(ttl, reason)
    sent: Any = None
    thrown: Exception | None = None
    while True:
        try:
            step = plan.throw(thrown) if thrown is not None else plan.send(sent)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        sent, thrown = None, None
        try:
            if isinstance(step, Pause):
                time.sleep(step.seconds)
            elif isinstance(step, Mint):
                sent = mint()
            else:
                sent = _run(step)
        except Exception as error:  # the plan decides what each failure means
            thrown = error


async def asite_token(ttl: int, reason: str | None, mint: Callable[[], Awaitable[dict[str, str]]]) -> dict[str, str]:
    """site_token's async twin: the pauses and the mint wait on the event loop."""
    plan = _flight(ttl, reason)
    sent: Any = None
    thrown: Exception | None = None
    while True:
        try:
            step = plan.throw(thrown) if thrown is not None else plan.send(sent)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        sent, thrown = None, None
        try:
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Mint):
                sent = await mint()
            else:
                sent = await sync_to_async(_run)(step)
        except Exception as error:  # the plan decides what each failure means
            thrown = error


def _run(step: Store) -> Any:
    try:
        return step.call()
    except Exception as error:
        logger.warning("The cache that holds the site's token failed: %s", type(error).__name__)
        raise StoreUnavailable from None


# --- The plan -------------------------------------------------------------------------------


def _flight(ttl: int, reason: str | None) -> Plan:
    """Serve the site's token, or mint it as the one caller holding the lock, or wait for that caller."""
    keys = _Keys.of_this_site()
    lock_seconds = _lock_seconds()
    deadline = monotonic() + lock_seconds + 1  # past one dead holder's lock
    try:
        while monotonic() < deadline:
            current = yield Store(partial(_read, keys.token))
            if _serves(current, reason):
                return current.answer()
            flight = secrets.token_hex(8)
            if (yield Store(partial(_cache().add, keys.lock, flight, lock_seconds))):
                return (yield from _fly(ttl, reason, keys, flight))
            holder = yield Store(partial(_cache().get, keys.lock))
            if holder is not None:
                landed = yield from _wait_for(holder, reason, keys, deadline)
                if landed is not None:
                    return landed
    except StoreUnavailable:
        logger.warning("Minting a token for this caller alone: the site's token cannot be shared now")
        return (yield MINT)  # type: ignore[no-any-return]
    raise RouteError(
        504, "upstream_timeout", f"The token this site is minting did not arrive within {lock_seconds + 1} s. Retry."
    )


def _fly(ttl: int, reason: str | None, keys: _Keys, flight: str) -> Plan:
    """Holding the lock: mint, store the token (or the failure) for the others, release the lock."""
    current = yield Store(partial(_read, keys.token))
    if _serves(current, reason):  # it landed between our first look and our lock
        yield from _quietly(Store(partial(_release, keys.lock, flight)))
        return current.answer()
    try:
        minted: dict[str, str] = yield MINT
    except RouteError as refusal:
        yield from _quietly(Store(partial(_cache().set, keys.failed(flight), refusal.as_record(), FAILURE_SECONDS)))
        yield from _quietly(Store(partial(_release, keys.lock, flight)))
        raise
    record = _record(minted, ttl, replacement=reason == "unauthorized")
    if record is not None:  # nothing after the mint may cost the token: a failed store only logs
        yield from _quietly(Store(partial(_cache().set, keys.token, record, ttl)))
    yield from _quietly(Store(partial(_release, keys.lock, flight)))
    return minted


def _wait_for(
    holder: str, reason: str | None, keys: _Keys, deadline: float
) -> Generator[Step, Any, dict[str, str] | None]:
    """Poll until `holder`'s flight lands (its token, or its failure raised); None when it ended
    without either (its holder died) or the deadline passed."""
    while monotonic() < deadline:
        yield Pause(POLL_SECONDS)
        current = yield Store(partial(_read, keys.token))
        if _serves(current, reason):
            return current.answer()
        if (yield Store(partial(_cache().get, keys.lock))) != holder:
            failure = RouteError.from_record((yield Store(partial(_cache().get, keys.failed(holder)))))
            if failure is not None:
                raise failure
            return None
    return None


def _quietly(step: Store) -> Generator[Step, Any, None]:
    """A cache write whose failure must not cost the answer (logged by the runner)."""
    try:
        yield step
    except StoreUnavailable:
        return


# --- Reading the site's token -----------------------------------------------------------------


def current_token(reason: str | None) -> dict[str, str] | None:
    """The site's token if this caller may have it without a mint; None otherwise (or when the
    cache fails: the flight then decides). A plain cache read: the route's fast path."""
    try:
        current = _read(_Keys.of_this_site().token)
    except Exception:  # the flight that follows reports the cache's failure
        return None
    return current.answer() if _serves(current, reason) else None


def held_token() -> SiteToken | None:
    """The site's token whatever its age (for riding through an outage); None when the cache fails."""
    try:
        return _read(_Keys.of_this_site().token)
    except Exception:  # without the cache there is nothing to ride through with
        logger.warning("The site's token could not be read to ride through a failed mint")
        return None


def _serves(current: SiteToken | None, reason: str | None) -> TypeGuard[SiteToken]:
    """Whether `current` answers this caller: fresh (more than half its ttl left); for reason
    "unauthorized", a replacement minted within REPLACEMENT_WINDOW."""
    if current is None:
        return False
    if reason == "unauthorized":
        return (
            current.replacement
            and reuse.now() - current.minted_at < REPLACEMENT_WINDOW
            and current.left() > timedelta(0)
        )
    return current.left() > timedelta(seconds=current.ttl / 2)


def _read(key: str) -> SiteToken | None:
    stored = _cache().get(key)
    if not isinstance(stored, dict):
        return None
    try:
        site = SiteToken(
            token=str(stored["token"]),
            expires_at=datetime.fromisoformat(stored["expiresAt"]),
            ttl=int(stored["ttl"]),
            minted_at=datetime.fromisoformat(stored["mintedAt"]),
            replacement=bool(stored["replacement"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
    aware = site.expires_at.tzinfo is not None and site.minted_at.tzinfo is not None
    return site if aware else None  # a time without an offset cannot be compared with now


def _record(minted: dict[str, str], ttl: int, *, replacement: bool) -> dict[str, Any] | None:
    try:
        datetime.fromisoformat(minted["expiresAt"])
    except (KeyError, TypeError, ValueError):
        return None
    return {**minted, "ttl": ttl, "mintedAt": reuse.now().isoformat(), "replacement": replacement}


def _release(lock: str, flight: str) -> None:
    """Drop the lock if it is still this flight's (it may have expired and been taken since)."""
    if _cache().get(lock) == flight:
        _cache().delete(lock)


def _cache() -> BaseCache:
    """The cache the rate limits count in: mintroute.E006 already asks that every process shares it."""
    return caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]


def _lock_seconds() -> int:
    try:
        timeout = sdk_conf.timeout()
    except ImproperlyConfigured:
        timeout = 5  # the mint itself reports the setting
    return lock_seconds(timeout)


def lock_seconds(timeout: float) -> int:
    """How long the single flight's lock lives with SPORTS_TIMEOUT = `timeout`: the longest a mint can
    take, and a margin. A mint is two calls at most (a key rotation retries once with the previous
    key), each as long as the SDK's retries allow."""
    return 2 * math.ceil(longest_call_seconds(timeout)) + LOCK_MARGIN_SECONDS


@dataclass(frozen=True)
class _Keys:
    """The cache keys of one site token, per API key: a new key (another account, test or live) mints afresh."""

    token: str
    lock: str

    @classmethod
    def of_this_site(cls) -> _Keys:
        try:
            api_key = sdk_conf.api_key()
        except ImproperlyConfigured:
            api_key = ""  # the mint itself reports the setting
        site = salted_hmac("mintroute.sharing", api_key, algorithm="sha256").hexdigest()[:32]
        return cls(token=f"mintroute:site-token:{site}", lock=f"mintroute:site-token:{site}:lock")

    def failed(self, flight: str) -> str:
        return f"{self.lock}:failed:{flight}"
