"""The route's metrics, for Prometheus (the `metrics` extra: prometheus_client). Off unless
SPORTS_METRICS is on; `GET /metrics` (mintroute.operations) serves them.

- `sports_token_requests_total{outcome}`: every answer of the route, counted where the route decides
  it (mintroute.views, `count`): the row's `error` code, or `minted`, `reused` ("login" mode),
  `shared` ("site" mode: the site's token, minted by another caller), `ridden_through`.
- `sports_token_request_seconds{outcome}`: how long each of those answers took, observed by the same
  `count`, from when the route first saw the request (`start`: route_answers_json, else the view).
- `sports_token_upstream_seconds{result}`: how long each `tokens.create` call took (mintroute.minting,
  `upstream_call`), by its result: `ok`, the service's error code, `timeout` or `unavailable` (any value outside
  these fixed sets is counted as `other`).
- `sports_token_site_token_age_seconds`, `sports_token_site_token_left_seconds` ("site" mode): read
  from the cache when /metrics is asked, so every worker answers the same.
- `sports_login_throttled_total`: login attempts refused by the login throttle (config.login).
- `sports_service_up`: 1 when this process's last check of the service (mintroute.readiness, at most once
  per its interval, asked by /readyz and by each scrape) answered, else 0.

Across worker processes: gunicorn's workers are processes of their own, so each would count alone.
prometheus_client's multiprocess mode keeps every worker's values in files under
PROMETHEUS_MULTIPROC_DIR (config/serve.py makes or checks it, and wipes it; config/gunicorn.conf.py
folds a dead worker's files into an archive), and /metrics adds them up, whichever worker answers: a
worker's counts outlive it. A file there that is not a metrics file is skipped and logged once
(mintroute/metrics_folder.py). Without that variable, one process counts in memory.

prometheus_client is imported only once metrics are on: a site without it works, and the check
mintroute.E021 says to install the extra when SPORTS_METRICS asks for it. Counting never costs an
answer: a failure to count is logged, once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mintroute import conf, reuse, sharing
from mintroute.access_log import note_outcome
from sportsproxy.errors import SportsAPIError, SportsTimeout, SportsUnavailable
from sportsproxy.service import ERROR_CODES

logger = logging.getLogger(__name__)

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own variable
# tokens.create takes tens of milliseconds when all is well; SPORTS_TIMEOUT (5 s) and its retries bound it.
UPSTREAM_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
# A reused token is answered in milliseconds, a mint in tens of them; an answer that waits on the service is
# bounded by SPORTS_TIMEOUT per attempt and the SDK's retries (sportsproxy.service.longest_call_seconds, 23 s
# with the defaults), and the browser client gives up after 10 s (authTimeoutSec). 2.5 s is the alerts' "slow".
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class _Metrics:
    requests: Any
    request_seconds: Any
    upstream: Any
    login_throttled: Any


def make_metrics(registry: Any = None) -> _Metrics:
    """The route's metric families, registered in `registry` (prometheus_client's default one)."""
    from prometheus_client import REGISTRY, Counter, Histogram

    into = REGISTRY if registry is None else registry
    return _Metrics(
        requests=Counter(
            "sports_token_requests", "Answers of POST /api/sports-token, by outcome.", ["outcome"], registry=into
        ),
        request_seconds=Histogram(
            "sports_token_request_seconds",
            "Time to answer POST /api/sports-token, by outcome.",
            ["outcome"],
            buckets=REQUEST_BUCKETS,
            registry=into,
        ),
        upstream=Histogram(
            "sports_token_upstream_seconds",
            "Time of the service's tokens.create, by result.",
            ["result"],
            buckets=UPSTREAM_BUCKETS,
            registry=into,
        ),
        login_throttled=Counter(
            "sports_login_throttled", "Login attempts refused by the login throttle.", registry=into
        ),
    )


class Once:
    """`make()` called once, on first use, whatever the number of threads asking at that moment: a
    gthread worker's first requests arrive together, and a family registered twice is an error."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._made: Any = None

    def __call__(self) -> Any:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made = self._make()
        return self._made


# Made on first use, in the worker (after PROMETHEUS_MULTIPROC_DIR is in its environment).
_metrics: Callable[[], _Metrics] = Once(make_metrics)


def enabled() -> bool:
    """SPORTS_METRICS is on and prometheus_client is installed (else the check says so)."""
    try:
        return conf.metrics_enabled()
    except Exception:
        return False


# Every label value comes from a fixed set: a value outside it (a code the service made up) is counted as OTHER,
# so nothing a caller or the service sends can grow the series without bound.
OTHER = "other"
ANSWERED_200 = frozenset({"minted", "reused", "shared", "ridden_through"})  # the outcomes that hand out a token
OUTCOMES = frozenset(
    {
        *ANSWERED_200,
        *("not_authenticated", "csrf_failed", "forbidden", "bad_request", "method_not_allowed", "rate_limited"),
        *("upstream_unauthorized", "upstream_error", "upstream_unavailable", "upstream_timeout"),
        *("rate_limit_unavailable", "authentication_unavailable"),
    }
)
RESULTS = frozenset({"ok", *ERROR_CODES, "timeout", "unavailable", "cancelled", "error"})


def bounded(value: str, allowed: frozenset[str]) -> str:
    """`value` when `allowed` holds it, else OTHER."""
    return value if value in allowed else OTHER


_STARTED = "_mintroute_started"  # on the request: when the route first saw it
clock: Callable[[], float] = time.perf_counter  # replaced by tests to move time


def start(request: object) -> None:
    """Note that the route sees `request` now; its answer's time counts from the first note."""
    if getattr(request, _STARTED, None) is None:
        setattr(request, _STARTED, clock())


def count(outcome: str, request: object = None) -> None:
    """One answer of the route: its row's `error` code, or minted, reused, shared, ridden_through; and,
    for a `request` the route noted (`start`), the time it took."""
    note_outcome(outcome)  # for the request's access line, metrics on or off
    if not enabled():
        return
    label = bounded(outcome, OUTCOMES)
    _quietly(lambda: _metrics().requests.labels(outcome=label).inc())
    started = getattr(request, _STARTED, None)
    if started is not None:
        elapsed = clock() - started
        _quietly(lambda: _metrics().request_seconds.labels(outcome=label).observe(elapsed))


def count_login_throttled() -> None:
    """One login attempt refused by the login throttle."""
    if enabled():
        _quietly(lambda: _metrics().login_throttled.inc())


def make_service_up(registry: Any = None) -> Any:
    """The gauge `sports_service_up`. Each process checks the service on its own schedule (when probed
    or scraped), so the workers' values differ in age: across workers the newest one is the answer
    (`livemostrecent`: the value of the latest check, a dead worker's left out), one series whatever
    the number of workers, where a sum or a minimum would mix an old check with a new one."""
    from prometheus_client import REGISTRY, Gauge

    return Gauge(
        "sports_service_up",
        "1 when the last check of the service answered (an HTTP answer below 500), else 0.",
        multiprocess_mode="livemostrecent",
        registry=REGISTRY if registry is None else registry,
    )


# Made at its first setting: made earlier, it would say 0 (the service down) before any check.
_service_up: Callable[[], Any] = Once(make_service_up)


def service_answered(answered: bool) -> None:
    """The end of one check of the service: `sports_service_up` is 1 if it answered, else 0."""
    if enabled():
        _quietly(lambda: _service_up().set(1 if answered else 0))


@contextmanager
def upstream_call() -> Iterator[None]:
    """Time one tokens.create call, labelled by how it ended."""
    if not enabled():
        yield
        return
    started = time.perf_counter()
    result = "ok"
    try:
        yield
    except BaseException as error:
        result = upstream_result(error)
        raise
    finally:
        elapsed = time.perf_counter() - started
        _quietly(lambda: _metrics().upstream.labels(result=bounded(result, RESULTS)).observe(elapsed))


def upstream_result(error: BaseException) -> str:
    """The `result` label of a failed call: the service's error code, or what kept it from answering."""
    if isinstance(error, SportsAPIError):
        return error.code or "error"
    if isinstance(error, SportsTimeout):
        return "timeout"
    if isinstance(error, SportsUnavailable):
        return "unavailable"
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    return "error"


_failed_once = False


def _quietly(action: Any) -> None:
    global _failed_once
    try:
        action()
    except Exception:
        if not _failed_once:
            _failed_once = True
            logger.exception("Could not count a metric; the route answers anyway (logged once per process)")


# --- /metrics ---------------------------------------------------------------------------------------


def exposition() -> tuple[bytes, str]:
    """Every metric in Prometheus's text format, and its content type: every worker's counts
    (multiprocess mode) or this process's, then the site's token read from the cache."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

    from mintroute.metrics_folder import Collector

    _metrics()  # the families exist before the first answer is counted
    folder = os.environ.get(MULTIPROCESS_DIR)
    if folder:  # every worker's files, a file that is not one skipped (mintroute/metrics_folder.py)
        counted = CollectorRegistry()
        counted.register(Collector(Path(folder)))
    else:
        counted = REGISTRY
    site = CollectorRegistry(auto_describe=False)
    site.register(_SiteTokenCollector())
    return generate_latest(counted) + generate_latest(site), CONTENT_TYPE_LATEST


class _SiteTokenCollector:
    """The site's token ("site" mode) as the cache holds it now: its age and the life it has left."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        try:
            site_mode = conf.token_sharing() == "site"
        except Exception:
            site_mode = False
        held = sharing.held_token() if site_mode else None
        if held is None:
            return
        now = reuse.now()
        yield GaugeMetricFamily(
            "sports_token_site_token_age_seconds",
            "Seconds since the site's token was minted (site mode).",
            value=(now - held.minted_at).total_seconds(),
        )
        yield GaugeMetricFamily(
            "sports_token_site_token_left_seconds",
            "Seconds the site's token has left to live (site mode).",
            value=(held.expires_at - now).total_seconds(),
        )
