"""Issue 29's row: upstream mints in each SPORTS_TOKEN_SHARING mode over one simulated hour.

1,000 users, each keeping a browser client's schedule: a mint on arrival (arrivals spread over the
first ten minutes, then everyone stays to the end of the hour), then a refresh 30 s before its
token expires; ttl 600. Both modes run in lockstep on one simulated clock (the route's, the rate
limits' and the stand-in service's), so nobody waits an hour: each request is a real request
through the site's middleware and view (Django's test client, in the bench process), each mint a
real call over a socket to the counting stand-in (tests/counting_service.py), the site's token and
the rate limits in a real Redis.

The route's p50 in "site" mode (every answer) is set against the reuse path's: in "login" mode,
each user's second tab, right after arrival, answered from the cookie without a mint.
"""

from __future__ import annotations

import heapq
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from tests import stores

USERS = 1_000
HOUR = 3_600
TTL = 600
LEEWAY = 30  # the browser client refreshes this long before expiry
ARRIVALS = 600  # users arrive within the first ten minutes
# A database of the tests' Redis (tests/stores.py), flushed before the row: the bench never runs beside the suite.
REDIS_URL = stores.redis_url(6)
START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SITE_MINTS_TARGET = 13  # one per half-life over the hour, plus the first
P50_RATIO_TARGET = 1.2


class SimulatedClock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def now(self) -> datetime:
        return START + timedelta(seconds=self.seconds)


def rows() -> list[tuple[str, str, str, bool | None]]:
    """The row's lines for run_bench's table (after django.setup())."""
    import django_ratelimit.core
    import redis
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client
    from django.test.utils import override_settings

    from mintroute import reuse
    from tests.counting_service import CountingService

    try:
        redis.Redis.from_url(REDIS_URL).flushdb()
    except redis.RedisError as error:
        return [("site mode: upstream mints over one simulated hour", f"not run: {error}", "", None)]

    clock = SimulatedClock()
    service = CountingService(now=clock.now)
    saved_now, saved_time = reuse.now, django_ratelimit.core.time
    reuse.now = clock.now
    django_ratelimit.core.time = SimpleNamespace(time=lambda: clock.now().timestamp())  # type: ignore[assignment]
    cache = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    overrides = override_settings(
        CACHES={"default": cache},
        ALLOWED_HOSTS=["testserver"],  # Django's test client, in the bench process
        SPORTS_BASE_URL=service.url,
        SPORTS_TRANSPORT="http",
        SPORTS_TOKEN_TTL=TTL,
        SPORTS_TOKEN_RATE="1000000/m",
        SPORTS_TOKEN_SHARING="login",  # each event sets its mode; the override puts it back
    )
    try:
        with overrides:
            users = User.objects.bulk_create(User(username=f"hour-{n}") for n in range(USERS))
            browsers: dict[str, list[Client]] = {"login": [], "site": []}
            for user in users:
                first = Client()
                first.force_login(user)
                second = Client()
                second.cookies["sessionid"] = first.cookies["sessionid"].value  # same login, its own cookie jar
                browsers["login"].append(first)
                browsers["site"].append(second)
            mints, samples, reuse_samples = _simulate(browsers, clock, service, settings)
    finally:
        reuse.now, django_ratelimit.core.time = saved_now, saved_time
        service.close()
        redis.Redis.from_url(REDIS_URL).flushdb()
    site_p50 = statistics.median(samples["site"]) * 1000
    reuse_p50 = statistics.median(reuse_samples) * 1000
    ratio = site_p50 / reuse_p50
    return [
        (
            f"{USERS} users over one simulated hour, ttl {TTL}: upstream mints, login / site mode",
            f"{mints['login']} / {mints['site']}",
            f"site <= {SITE_MINTS_TARGET}",
            mints["site"] <= SITE_MINTS_TARGET,
        ),
        (
            "site mode: the route's p50 against the reuse path's (login mode, cookie)",
            f"{site_p50:.2f} / {reuse_p50:.2f} ms = {ratio:.2f} ({len(samples['site'])} / {len(reuse_samples)} calls)",
            f"<= {P50_RATIO_TARGET}",
            ratio <= P50_RATIO_TARGET,
        ),
    ]


def _simulate(
    browsers: dict[str, list[Any]], clock: SimulatedClock, service: Any, settings: Any
) -> tuple[dict[str, int], dict[str, list[float]], list[float]]:
    """Run both modes' schedules in one time order; returns mints and request durations per mode."""
    arrivals = random.Random(29)  # noqa: S311 - the same arrivals on every run, not a secret
    events: list[tuple[float, str, int, str]] = []
    for user in range(USERS):
        at = arrivals.uniform(0, ARRIVALS)
        for mode in ("login", "site"):
            heapq.heappush(events, (at, mode, user, "initial"))
    mints = {"login": 0, "site": 0}
    samples: dict[str, list[float]] = {"login": [], "site": []}
    reuse_samples: list[float] = []
    while events:
        at, mode, user, reason = heapq.heappop(events)
        clock.seconds = at
        settings.SPORTS_TOKEN_SHARING = mode
        browser = browsers[mode][user]
        before = service.mints
        answer, took = _call(browser, reason)
        mints[mode] += service.mints - before
        samples[mode].append(took)
        if reason == "initial":  # a second tab opens at once
            tab, took = _call(browser, "initial")
            samples[mode].append(took)
            if mode == "login":
                reuse_samples.append(took)
            if tab["token"] != answer["token"]:
                raise RuntimeError(f"the second tab got another token in {mode} mode")
        refresh_at = (datetime.fromisoformat(answer["expiresAt"]) - START).total_seconds() - LEEWAY
        if refresh_at < HOUR:
            heapq.heappush(events, (max(refresh_at, at), mode, user, "refresh"))
    return mints, samples, reuse_samples


def _call(browser: Any, reason: str) -> tuple[dict[str, str], float]:
    started = time.perf_counter()
    response = browser.post("/api/sports-token", {"reason": reason}, content_type="application/json")
    took = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"the route answered {response.status_code}: {response.content[:200]!r}")
    return response.json(), took
