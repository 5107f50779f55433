"""Site mode (SPORTS_TOKEN_SHARING = "site"): one token for every caller, minted once per half-life.

The service's tokens carry no user: every token minted with the site's key has the key's powers and
nothing else. So in site mode the route keeps one token, the site's, in the cache every process
shares (the one the rate limits count in), and answers it to every admitted caller while more than
half its ttl is left.

Single flight: a caller that finds the site's token stale takes a lock in the cache (`add`: one
caller in one process wins) and mints; the others poll the cache until the new token lands, the
holder's failure is written there (they share it), or the lock is gone. The lock is a short lease
(LEASE_SECONDS) that a thread of the holder's renews while it mints: a holder whose process dies
stops renewing, and the others take over within the lease. Every wait is bounded.

A caller that leaves costs nobody. Under ASGI, Django cancels the view when its client disconnects;
the holder's flight runs as a task of its own that its caller awaits shielded, so it completes, and
its token (or its failure) lands for the others. Under WSGI nothing cancels a view; whatever else
ends a mint (an exception that is not an Exception) makes the renewer release the lock at once.

The site's token only moves forward: a flight stores its token unless the cache holds one that expires
later, and releases or renews its lock only while the lock is still its own, each as one step on the
cache (mintroute.cache_steps). A holder held up past its token's half-life answers the site's fresher
token, or 504, never less than the half-life rule allows; `mintedAt` is when the service answered.

`reason: "unauthorized"` replaces the site's token; for REPLACEMENT_WINDOW after a replacement,
other `unauthorized` callers get the replacement instead of minting again.

If the cache cannot be reached (a Redis failover: before Sentinel names the new primary, or under a
flight), the same flight runs again on a cache of this process (PROCESS_CACHE): the callers of one
process that meet the outage together share one mint, and the callers after them that token while it
is fresh, so an outage costs at most one mint per process beyond the one that was due. The route's
rate limits count in the shared cache and have just let the request through, so the outage is brief.

The rules are written once, as a plan (`_flight`) that yields what it needs done: a cache
operation, a pause, the mint. `site_token` runs the plan with blocking calls (WSGI), `asite_token`
on the event loop (ASGI): the twins differ only in how they wait.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from types import TracebackType
from typing import Any, TypeGuard

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import BaseCache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.exceptions import ImproperlyConfigured
from django.utils.crypto import salted_hmac

from mintroute import reuse
from mintroute.cache_steps import delete_if, extend_if, set_if_later
from mintroute.errors import RouteError
from sportsproxy.django import conf as sdk_conf
from sportsproxy.service import longest_call_seconds

logger = logging.getLogger(__name__)

REPLACEMENT_WINDOW = timedelta(seconds=10)  # other `unauthorized` callers get the replacement
POLL_SECONDS = 0.02  # how often a waiting caller looks for the token being minted
FLIGHT_MARGIN_SECONDS = 2  # beyond the longest mint, before a waiting caller gives up
LEASE_SECONDS = 4  # the lock's life from its last renewal: how long a dead holder delays the others
RENEW_SECONDS = 1  # how often the live holder renews its lease
FAILURE_SECONDS = 5  # how long a failed flight's answer stays for the callers that waited on it
# Where a flight runs while the shared cache cannot be reached: this process's single flight and token.
PROCESS_CACHE: BaseCache = LocMemCache("mintroute-sharing", {})

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
class TakeLock(Store):
    """The cache operation that takes the single flight's lock (True when taken)."""


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Lease:
    """The single flight's lock, held by one flight while it mints."""

    cache: BaseCache
    key: str
    flight: str
    longest: float  # seconds: the longest a mint can take, so the longest a live holder renews

    def renew(self) -> None:
        extend_if(self.cache, self.key, self.flight, LEASE_SECONDS)  # only the holder's own lease, in one step

    def release(self) -> None:
        _release(self.key, self.flight, self.cache)


@dataclass(frozen=True)
class Mint:
    """Mint a token upstream; the runner sends back `{token, expiresAt}` or throws the RouteError.
    With a `lease`, the runner keeps it renewed while the mint runs."""

    lease: Lease | None = None


MINT = Mint()  # a mint for this caller alone: nothing to renew
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
                with _Renewal(step.lease):
                    sent = mint()
            else:
                sent = _run(step)
        except Exception as error:  # the plan decides what each failure means
            thrown = error


AsyncMint = Callable[[], Awaitable[dict[str, str]]]


async def asite_token(ttl: int, reason: str | None, mint: AsyncMint) -> dict[str, str]:
    """site_token's async twin: the pauses and the mint wait on the event loop, and the flight this
    caller holds completes for the others if the caller leaves."""
    return await _adrive(_flight(ttl, reason), mint)


async def _adrive(
    plan: Plan, mint: AsyncMint, sent: Any = None, thrown: Exception | None = None, *, shielded: bool = False
) -> dict[str, str]:
    while True:
        try:
            step = plan.throw(thrown) if thrown is not None else plan.send(sent)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        sent, thrown = None, None
        if isinstance(step, TakeLock) and not shielded:
            # Once the lock is taken the flight is the site's, not this caller's (see _shielded).
            outcome = await _shielded(_atake(plan, step, mint))
            if not isinstance(outcome, _Untaken):
                return outcome
            sent, thrown = outcome.sent, outcome.thrown
            continue
        try:
            sent = await _aexecute(step, mint)
        except Exception as error:  # the plan decides what each failure means
            thrown = error


@dataclass(frozen=True)
class _Untaken:
    """The lock was not taken: what the caller's own drive of the plan goes on with."""

    sent: Any = None
    thrown: Exception | None = None


async def _atake(plan: Plan, step: TakeLock, mint: AsyncMint) -> dict[str, str] | _Untaken:
    """Take the lock and, if taken, fly: mint, store the token (or the failure), release the lock."""
    try:
        taken = await _aexecute(step, mint)
    except Exception as error:  # the plan decides what each failure means
        return _Untaken(thrown=error)
    if not taken:
        return _Untaken(sent=taken)
    return await _adrive(plan, mint, taken, shielded=True)


async def _aexecute(step: Step, mint: AsyncMint) -> Any:
    if isinstance(step, Pause):
        await asyncio.sleep(step.seconds)
        return None
    if isinstance(step, Mint):
        with _Renewal(step.lease):
            return await mint()
    # Not the request's own thread: a flight whose caller left outlives the request's executor.
    return await sync_to_async(_run, thread_sensitive=False)(step)


Taking = dict[str, str] | _Untaken
_landing: set[asyncio.Future[Taking]] = set()  # flights whose lock may be held, kept referenced until they land


async def _shielded(flight: Coroutine[Any, Any, Taking]) -> Taking:
    """Run `flight` as a task of its own and await it shielded: cancelling the caller (Django does when
    its client disconnects) leaves it running from the moment it asks for the lock, so a lock it takes
    is never left without its holder: the flight lands and unlocks for the others."""
    task = asyncio.ensure_future(flight)
    _landing.add(task)
    task.add_done_callback(_landed)
    return await asyncio.shield(task)


def _landed(task: asyncio.Future[Taking]) -> None:
    _landing.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: a failure whose caller left was written for the others already


class _Renewal:
    """While a flight's holder mints: renews its lease every RENEW_SECONDS from a thread of its own,
    for no longer than the longest mint; if the mint ends by anything but a result or an Exception
    (the plan settles those), releases the lock at once. Without a lease, does nothing."""

    def __init__(self, lease: Lease | None) -> None:
        self._lease = lease
        self._done = threading.Event()
        self._abandoned = False

    def __enter__(self) -> None:
        if self._lease is not None:
            threading.Thread(target=self._renew, name="mintroute-lease", daemon=True).start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._abandoned = kind is not None and not issubclass(kind, Exception)
        self._done.set()

    def _renew(self) -> None:
        assert self._lease is not None
        bound = monotonic() + self._lease.longest
        while not self._done.wait(RENEW_SECONDS) and monotonic() < bound:
            _in_a_thread(self._lease.renew, "renew the single flight's lease")
        if self._abandoned:
            _in_a_thread(self._lease.release, "release the single flight's lock")


def _in_a_thread(call: Callable[[], None], what: str) -> None:
    try:
        call()
    except Exception as error:  # the lease then expires on its own
        logger.warning("Could not %s: %s", what, type(error).__name__)


def _run(step: Store) -> Any:
    try:
        return step.call()
    except Exception as error:
        logger.warning("The cache that holds the site's token failed: %s", type(error).__name__)
        raise StoreUnavailable from None


# --- The plan -------------------------------------------------------------------------------


def _flight(ttl: int, reason: str | None, cache: BaseCache | None = None) -> Plan:
    """Serve the site's token, or mint it as the one caller holding the lock, or wait for that caller:
    on the shared cache, or on `cache` (PROCESS_CACHE, while the shared one cannot be reached)."""
    keys = _Keys.of_this_site()
    longest = _flight_seconds()
    deadline = monotonic() + longest + 1  # past the longest live mint
    on = cache if cache is not None else _cache()
    try:
        while monotonic() < deadline:
            current = yield Store(partial(_read, keys.token, on))
            if _serves(current, reason):
                return current.answer()
            flight = secrets.token_hex(8)
            if (yield TakeLock(partial(on.add, keys.lock, flight, LEASE_SECONDS))):
                return (yield from _fly(ttl, reason, keys, Lease(on, keys.lock, flight, longest)))
            holder = yield Store(partial(on.get, keys.lock))
            if holder is not None:
                landed = yield from _wait_for(holder, reason, keys, deadline, on)
                if landed is not None:
                    return landed
    except StoreUnavailable:
        if cache is None:
            logger.warning("The site's token is shared within this process only: the cache cannot be reached")
            return (yield from _flight(ttl, reason, PROCESS_CACHE))
        return (yield MINT)  # type: ignore[no-any-return]
    raise RouteError(
        504, "upstream_timeout", f"The token this site is minting did not arrive within {longest + 1} s. Retry."
    )


def _fly(ttl: int, reason: str | None, keys: _Keys, lease: Lease) -> Plan:
    """Holding the lock: mint (the runner renews the lease meanwhile), store the token (or the failure)
    for the others, release the lock."""
    current = yield Store(partial(_read, keys.token, lease.cache))
    if _serves(current, reason):  # it landed between our first look and our lock
        yield from _quietly(Store(lease.release))
        return current.answer()
    started = monotonic()
    try:
        minted: dict[str, str] = yield Mint(lease)
    except RouteError as refusal:
        failure = refusal.as_record()
        yield from _quietly(Store(partial(lease.cache.set, keys.failed(lease.flight), failure, FAILURE_SECONDS)))
        yield from _quietly(Store(lease.release))
        raise
    record = _record(minted, ttl, replacement=reason == "unauthorized", minted_at=reuse.now())
    held_up = monotonic() - started >= LEASE_SECONDS  # long enough to have lost the lock meanwhile
    if record is not None:  # nothing after the mint may cost the token: a failed store only logs
        yield from _quietly(Store(partial(_store, keys.token, record, ttl, lease.cache)))
    yield from _quietly(Store(lease.release))
    if record is None or not held_up or _fresh(record):
        return minted
    # This holder was held up (paused, swapped out) past its token's half-life: the site's token, if
    # a later flight stored a fresh one, else no token rather than one with less than its rules allow.
    current = yield Store(partial(_read, keys.token, lease.cache))
    if _serves(current, None):
        return current.answer()
    raise RouteError(504, "upstream_timeout", "The token this site minted arrived too late to hand out. Retry.")


def _wait_for(
    holder: str, reason: str | None, keys: _Keys, deadline: float, cache: BaseCache
) -> Generator[Step, Any, dict[str, str] | None]:
    """Poll until `holder`'s flight lands (its token, or its failure raised); None when it ended
    without either (its holder died) or the deadline passed."""
    while monotonic() < deadline:
        yield Pause(POLL_SECONDS)
        current = yield Store(partial(_read, keys.token, cache))
        if _serves(current, reason):
            return current.answer()
        if (yield Store(partial(cache.get, keys.lock))) != holder:
            failure = RouteError.from_record((yield Store(partial(cache.get, keys.failed(holder)))))
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


def token_key() -> str:
    """The cache key of the site's token (for a caller that reads it along with other work: `current_token`)."""
    return _Keys.of_this_site().token


def current_token(reason: str | None, read: dict[str, Any] | None = None) -> dict[str, str] | None:
    """The site's token if this caller may have it without a mint; None otherwise (or when the
    cache fails: the flight then decides). A plain cache read, the route's fast path; none when `read`
    (what the caller read from the cache, mintroute.ratelimits) says what `token_key()` holds."""
    key = _Keys.of_this_site().token
    try:
        current = _parsed(read[key]) if read and key in read else _read(key)
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


def _read(key: str, cache: BaseCache | None = None) -> SiteToken | None:
    return _parsed((cache if cache is not None else _cache()).get(key))


def _parsed(stored: Any) -> SiteToken | None:
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


def _record(minted: dict[str, str], ttl: int, *, replacement: bool, minted_at: datetime) -> dict[str, Any] | None:
    """What the cache keeps of a token; `minted_at` is when the service answered (the mint's return, not the
    store, which a paused holder reaches later)."""
    try:
        datetime.fromisoformat(minted["expiresAt"])
    except (KeyError, TypeError, ValueError):
        return None
    return {**minted, "ttl": ttl, "mintedAt": minted_at.isoformat(), "replacement": replacement}


def _fresh(record: dict[str, Any]) -> bool:
    """Whether a token just recorded still has more than half its ttl left."""
    left = datetime.fromisoformat(record["expiresAt"]) - reuse.now()
    return left > timedelta(seconds=record["ttl"] / 2)


def _store(key: str, record: dict[str, Any], ttl: int, cache: BaseCache) -> bool:
    """Keep `record` as the site's token unless the cache holds one that expires later: the site's token
    only moves forward, whichever flight lands last. Of two that expire together (minted in the same
    second), a replacement (reason "unauthorized") wins: the other is the token the service refused."""
    expires = int(datetime.fromisoformat(record["expiresAt"]).timestamp() * 1000)
    return set_if_later(cache, key, record, expires * 2 + int(record["replacement"]), ttl)


def _release(lock: str, flight: str, cache: BaseCache) -> None:
    """Drop the lock if it is still this flight's (it may have expired and been taken since), in one step."""
    delete_if(cache, lock, flight)


def _cache() -> BaseCache:
    """The cache the rate limits count in: mintroute.E006 already asks that every process shares it."""
    return caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]


def _flight_seconds() -> int:
    try:
        timeout = sdk_conf.timeout()
    except ImproperlyConfigured:
        timeout = 5  # the mint itself reports the setting
    return flight_seconds(timeout)


def flight_seconds(timeout: float) -> int:
    """How long a flight may take with SPORTS_TIMEOUT = `timeout` (how long a live holder renews its
    lease, and a waiting caller waits): the longest a mint can take, and a margin. A mint is two calls
    at most (a key rotation retries once with the previous key), each as long as the SDK's retries allow."""
    return 2 * math.ceil(longest_call_seconds(timeout)) + FLIGHT_MARGIN_SECONDS


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
