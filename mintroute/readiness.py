"""Readiness: whether this process can serve now. `GET /readyz` (mintroute.operations) asks it.

Three checks, each a dependency the route needs: `database` (authentication reads it), `cache`
(the rate limits count there; checked when it is Redis, by a write through the site's own cache, so a
replica is `unavailable`: a per-process cache cannot be down) and
`service` (a plain GET of SPORTS_BASE_URL's origin: any HTTP answer below 500 is an answer; asked
at most once per SERVICE_INTERVAL per process, and the stores at most once per STORE_INTERVAL, so a fleet of
probes never becomes load on any of them: a probe within the interval reads the last run's report).

Ready means this process can do its work: its database and its cache answer, and it is not stopping
(`begin_stopping`: its server's drain on SIGTERM, config/drain.py). The service's state is reported,
never gated on: an upstream outage is every instance's at once, and taking them all out of the load
balancer would only turn the route's ride-through and the logins into errors. Each run of the service
check sets the metric `sports_service_up` (mintroute.metrics); a scrape of /metrics asks for a run too,
so the metric follows the service whether or not anything probes.

Each state is one word: `ok`, `unavailable` (refused, failed, or answered 5xx) or `timeout` (no
answer within the bound); never a host name, a secret or a traceback: the detail goes to the log,
once per change of state.

Whatever hangs beneath (a frozen Redis, a database that accepts and never answers, a silent
service), the report is ready within CHECK_SECONDS: every check runs in a thread of its own, all at
once, and a check still running at the deadline is `timeout`. A check runs at most once at a time
per process: a probe that finds it still running waits for that run instead of starting another,
so a hung dependency never piles up threads. Each run is bounded on its own too (connection
timeouts), so it ends soon after.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, connections

from mintroute import metrics
from sportsproxy.django import conf as sdk_conf

logger = logging.getLogger(__name__)

CHECK_SECONDS = 1.5  # every check together: /readyz answers within 2 s, whatever hangs beneath
CONNECT_SECONDS = 2  # each run's own bound (libpq's connect_timeout takes whole seconds, 2 at least)
SERVICE_SECONDS = 1.0  # the GET of the service's origin, per phase (connect, read)
SERVICE_INTERVAL = 10.0  # the service is asked at most once per this many seconds per process
# The stores are asked at most once a second per process: probes within it share that run's report, so a
# fleet of probes opens at most one database and one Redis connection a second per process.
STORE_INTERVAL = 1.0
RETRY_AFTER_SECONDS = 5
PROBE_KEY = "mintroute:readiness"  # the cache check's own key, written and left to expire
PROBE_KEY_SECONDS = 10

OK, UNAVAILABLE, TIMEOUT = "ok", "unavailable", "timeout"

monotonic: Callable[[], float] = time.monotonic  # replaced by tests to move the interval's clock


@dataclass
class _Run:
    """One run of a check, in its own thread."""

    started: float
    done: threading.Event = field(default_factory=threading.Event)
    state: str = TIMEOUT


class Check:
    """One dependency's probe: at most one run at a time; a new run only after `interval` seconds."""

    def __init__(
        self,
        name: str,
        probe: Callable[[], None],
        interval: float = 0.0,
        report: Callable[[bool], None] | None = None,
    ) -> None:
        self.name = name
        self.probe = probe  # returns when the dependency answered; raises otherwise
        self.interval = interval
        self.report = report  # told, at the end of each run, whether the dependency answered
        self._lock = threading.Lock()
        self._run: _Run | None = None
        self._reported = OK

    def begin(self) -> _Run:
        """The run this probe reads: the one in flight, a recent one (within `interval`), or a new one."""
        with self._lock:
            now = monotonic()
            current = self._run
            if current is None or (current.done.is_set() and now - current.started >= self.interval):
                current = self._run = _Run(started=now)
                threading.Thread(target=self._execute, args=(current,), name=f"readyz-{self.name}", daemon=True).start()
            return current

    def _execute(self, run: _Run) -> None:
        try:
            self.probe()
        except TimeoutError as error:
            self._note(TIMEOUT, error)
            run.state = TIMEOUT
        except Exception as error:
            # What the error says, less the `socket_timeout=2.0` of a connection's repr inside it (redis-py's
            # "No master found" names each Sentinel it asked so): those say no timeout happened.
            said = re.sub(r"\w*timeout=", "", f"{type(error).__name__} {error}".lower())
            state = TIMEOUT if "timeout" in said or "timed out" in said else UNAVAILABLE
            self._note(state, error)
            run.state = state
        else:
            self._note(OK, None)
            run.state = OK
        finally:
            if self.report is not None:
                self.report(run.state == OK)
            run.done.set()

    def _note(self, state: str, error: BaseException | None) -> None:
        """Log a change of state (a probe every few seconds would otherwise repeat the same line)."""
        if state == self._reported:
            return
        self._reported = state
        if error is None:
            logger.warning("Readiness: %s answers again", self.name)
        else:
            logger.warning("Readiness: %s is %s (%s: %s)", self.name, state, type(error).__name__, error)


def state_of(run: _Run, deadline: float) -> str:
    """The run's state, or `timeout` if it has not ended by `deadline`."""
    return run.state if run.done.wait(max(0.0, deadline - monotonic())) else TIMEOUT


# --- The probes -----------------------------------------------------------------------------------


def probe_database() -> None:
    """A new connection of the site's default database (bounded in its connecting), then SELECT 1."""
    connection = connections.create_connection(DEFAULT_DB_ALIAS)
    if connection.vendor in ("postgresql", "mysql"):
        options = connection.settings_dict.get("OPTIONS") or {}
        bound = min(int(options.get("connect_timeout") or CONNECT_SECONDS), CONNECT_SECONDS)
        connection.settings_dict = {**connection.settings_dict, "OPTIONS": {**options, "connect_timeout": bound}}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        connection.close()


def redis_location() -> str | None:
    """The address of the cache the rate limits count in, when that cache is Redis; else None."""
    alias = getattr(settings, "RATELIMIT_USE_CACHE", "default")
    if alias not in settings.CACHES or "redis" not in type(caches[alias]).__module__.lower():
        return None
    location = settings.CACHES[alias].get("LOCATION") or ""
    first = location[0] if isinstance(location, list | tuple) else str(location).split(",")[0]
    return str(first).strip() or None


def probe_cache() -> None:
    """A write of a key of its own through the site's own cache (its connection settings, Sentinel
    included): a replica answers PING but refuses the writes the rate limits make, so only a primary
    that takes this write is `ok`. Bounded by the cache's own socket timeouts (config/settings.py: 2 s)."""
    if redis_location() is None:
        return
    # A cache of this run's own, its connections closed when the run ends: each run is a new thread, and
    # the thread's own cache (Django keeps one per thread) would leave its pool to the garbage collector.
    cache = caches.create_connection(getattr(settings, "RATELIMIT_USE_CACHE", "default"))
    try:
        cache.set(PROBE_KEY, 1, timeout=PROBE_KEY_SECONDS)
    finally:
        _disconnect(cache)


def _disconnect(cache: Any) -> None:
    """Close the connections of a Redis cache: its pool (the one every call of it uses) and, through
    Sentinel, the Sentinels' own."""
    pool = cache._cache.get_client(write=True).connection_pool  # Django's RedisCache client: one pool a cache
    pool.disconnect()
    for sentinel in getattr(getattr(pool, "sentinel_manager", None), "sentinels", ()):
        sentinel.connection_pool.disconnect()


def probe_service() -> None:
    """A GET of the service's origin; any HTTP answer below 500 says it answers. The embedded sandbox
    (an in-process transport) is this process itself: it answers while the database does."""
    if sdk_conf.transport() != "http":
        return
    origin = sdk_conf.base_url().rstrip("/") + "/"
    answer = httpx2.get(origin, timeout=SERVICE_SECONDS, follow_redirects=False)
    if answer.status_code >= 500:
        raise ConnectionError(f"the service answered {answer.status_code}")


DATABASE = Check("database", probe_database, interval=STORE_INTERVAL)
CACHE = Check("cache", probe_cache, interval=STORE_INTERVAL)
SERVICE = Check("service", probe_service, interval=SERVICE_INTERVAL, report=metrics.service_answered)
REPORTED_ONLY = frozenset({"service"})  # in the answer's checks, never a reason to be unready

_stopping = threading.Event()


def begin_stopping() -> None:
    """This process is stopping: from now on it is not ready, whatever its checks say. Its server
    calls this when its drain begins (config/drain.py) and keeps serving meanwhile."""
    _stopping.set()


def stopping() -> bool:
    """Whether `begin_stopping` was called in this process."""
    return _stopping.is_set()


def readiness() -> tuple[bool, dict[str, str]]:
    """Whether this process can serve (its stores answer and it is not stopping), and each check's
    state by name, the service's included."""
    deadline = monotonic() + CHECK_SECONDS
    checks = [DATABASE, *((CACHE,) if redis_location() else ()), SERVICE]
    runs = {check.name: check.begin() for check in checks}  # all at once
    states = {name: state_of(run, deadline) for name, run in runs.items()}
    stores_answer = all(state == OK for name, state in states.items() if name not in REPORTED_ONLY)
    return stores_answer and not stopping(), states


def service_state() -> str:
    """The service check's state, from a run of the last SERVICE_INTERVAL or a new one, within CHECK_SECONDS:
    a scrape of /metrics asks it, so `sports_service_up` follows the service whether or not anything probes."""
    return state_of(SERVICE.begin(), monotonic() + CHECK_SECONDS)
