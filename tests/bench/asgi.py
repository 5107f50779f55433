"""The ASGI rows of `make bench`: the route's async entry against its plain view forced under the
same uvicorn worker in the same rounds (the contract's row), both against one gunicorn gthread worker
for the record, the floor (an empty async view under uvicorn against an empty sync view under
gthread), and the burst of 40 slow mints.

Every server runs this project's code and settings in front of the stand-in service
(tests/slow_upstream.py), and every request mints upstream (`{"reason": "unauthorized"}`; the
bench settings lift the route's limit). The uvicorn worker is started as `make serve` starts
uvicorn (config/serve.py), its peer as `make serve` starts gunicorn (config/gunicorn.conf.py,
`WEB_THREADS` threads), one worker each. On uvicorn, `/api/sports-token` is the route as Django
resolves it there (the async entry), and `/bench/sync-mint` the plain view (tests/bench/urls.py).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2

from config import serve
from tests.bench import wrk

if TYPE_CHECKING:
    from tests.bench.run_bench import Bench, Server

CONNECTIONS = 64
UPSTREAM_DELAY = "0.05"  # seconds the stand-in service takes to answer each mint
ROUTE = "/api/sports-token"
SYNC_VIEW = "/bench/sync-mint"
EMPTY_ASYNC = "/bench/empty-async"
EMPTY_SYNC = "/bench/empty-sync"
WARM_UP_SECONDS = 1.0
# The third wave's burst: with the service answering after FLOOR_DELAY, FLOOR_MINTS concurrent mints
# to one uvicorn worker all answer 200 within FLOOR_BOUND_SECONDS.
FLOOR_MINTS = 40
FLOOR_DELAY = "1"
FLOOR_BOUND_SECONDS = 4.0


def route_versus_plain_view(bench: Bench) -> None:
    """The contract's row (the async entry against the plain view, one uvicorn worker, the same rounds),
    and each against one gthread worker for the record."""
    from tests.bench.run_bench import ROUNDS, SECONDS, UVICORN, cpu_seconds

    why_not = wrk.missing()
    if why_not is not None:
        bench.row("ASGI: one uvicorn worker vs one gunicorn gthread worker", why_not, ">= 1.0", None)
        return
    script = bench.fresh_mint_script()
    loads: dict[str, list[wrk.Load]] = {"async": [], "sync": [], "gthread": []}
    cpu_ms: dict[str, list[float]] = {name: [] for name in loads}  # the worker's CPU per request, each round
    with ExitStack() as running:
        upstream = _upstream(running, bench, UPSTREAM_DELAY)
        site = _site(running, bench, upstream, UVICORN)
        peer = _site(running, bench, upstream, serve.http_command())
        targets = {"async": site.url + ROUTE, "sync": site.url + SYNC_VIEW, "gthread": peer.url + ROUTE}
        for url in targets.values():  # imports, pools and threads exist before the rounds
            wrk.run(url, seconds=WARM_UP_SECONDS, connections=CONNECTIONS, script=script)
        workers = {"async": site, "sync": site, "gthread": peer}
        for number in range(ROUNDS * 2):
            for name in list(targets) if number % 2 == 0 else reversed(targets):
                before = cpu_seconds(workers[name].process.pid)
                load = wrk.run(targets[name], seconds=SECONDS, connections=CONNECTIONS, script=script)
                loads[name].append(load)
                cpu_ms[name].append(1000 * (cpu_seconds(workers[name].process.pid) - before) / max(load.requests, 1))
    rates = {name: statistics.median(load.rate for load in loads[name]) for name in loads}
    cpu = {name: statistics.median(cpu_ms[name]) for name in loads}
    failed = sum(load.failed for load in loads["async"])
    bench.row(
        f"ASGI: {ROUTE}'s async entry vs the plain view forced under the same 1 uvicorn worker, same rounds",
        f"{_ratio(rates, 'async', 'sync')}; {_describe(loads['async'], cpu_ms['async'])} "
        f"vs {_describe(loads['sync'], cpu_ms['sync'])}",
        ">= 1.0, CPU/mint <= plain's, 0 failed",
        rates["async"] >= rates["sync"] and cpu["async"] <= cpu["sync"] and failed == 0,
    )
    for name, measure in (
        ("async", "ASGI, same rounds, for the record: the async entry vs 1 gunicorn gthread worker"),
        ("sync", "ASGI, same rounds, for the record: the plain view under uvicorn vs the same gthread worker"),
    ):
        value = f"{_ratio(rates, name, 'gthread')}; gthread {_describe(loads['gthread'], cpu_ms['gthread'])}"
        bench.row(measure, value, "for the record", None)


def floor(bench: Bench) -> None:
    """What each server costs before any view: an empty async view under one uvicorn worker against an
    empty sync view under one gthread worker, the same middleware, interleaved rounds of plain GETs."""
    from tests.bench.run_bench import ROUNDS, SECONDS, UVICORN, cpu_seconds

    why_not = wrk.missing()
    if why_not is not None:
        bench.row(
            "ASGI floor: an empty async view under uvicorn vs an empty sync view under gthread", why_not, "", None
        )
        return
    loads: dict[str, list[wrk.Load]] = {"uvicorn": [], "gthread": []}
    cpu_ms: dict[str, list[float]] = {name: [] for name in loads}
    with ExitStack() as running:
        upstream = _upstream(running, bench, UPSTREAM_DELAY)
        workers = {"uvicorn": _site(running, bench, upstream, UVICORN)}
        workers["gthread"] = _site(running, bench, upstream, serve.http_command())
        targets = {"uvicorn": workers["uvicorn"].url + EMPTY_ASYNC, "gthread": workers["gthread"].url + EMPTY_SYNC}
        for url in targets.values():
            wrk.run(url, seconds=WARM_UP_SECONDS, connections=CONNECTIONS)
        for number in range(ROUNDS * 2):
            for name in list(targets) if number % 2 == 0 else reversed(targets):
                before = cpu_seconds(workers[name].process.pid)
                load = wrk.run(targets[name], seconds=SECONDS, connections=CONNECTIONS)
                loads[name].append(load)
                cpu_ms[name].append(1000 * (cpu_seconds(workers[name].process.pid) - before) / max(load.requests, 1))
    rates = {name: statistics.median(load.rate for load in loads[name]) for name in loads}
    bench.row(
        "ASGI floor: an empty async view under 1 uvicorn worker vs an empty sync view under 1 gthread worker",
        f"{_ratio(rates, 'uvicorn', 'gthread')}; {_describe(loads['uvicorn'], cpu_ms['uvicorn'])} "
        f"vs {_describe(loads['gthread'], cpu_ms['gthread'])}",
        "for the record",
        None,
    )


def _ratio(rates: dict[str, float], name: str, against: str) -> str:
    return f"{rates[name]:.0f} / {rates[against]:.0f} req/s = {rates[name] / rates[against]:.3f}"


@dataclass(frozen=True)
class Burst:
    """FLOOR_MINTS mints sent at once: each one's status and seconds from the common start, and the
    worker's OS threads while every one of them was waiting on the service (None if never seen)."""

    statuses: list[int]
    seconds: list[float]
    threads_while_waiting: int | None


def burst(bench: Bench) -> None:
    """FLOOR_MINTS concurrent mints on a service that takes FLOOR_DELAY: the route, and the plain view."""
    from tests.bench.run_bench import UVICORN

    with ExitStack() as running:
        upstream = _upstream(running, bench, FLOOR_DELAY)
        site = _site(running, bench, upstream, UVICORN)
        asyncio.run(_burst(bench, site, upstream, ROUTE, 1))  # a warm worker, as one that has served before
        idle_threads = _threads(site.process.pid)
        route, plain = (asyncio.run(_burst(bench, site, upstream, path, FLOOR_MINTS)) for path in (ROUTE, SYNC_VIEW))
    answered = route.statuses.count(200)
    bench.row(
        f"ASGI burst: {FLOOR_MINTS} concurrent mints, service after {FLOOR_DELAY} s, 1 uvicorn worker: 200s, slowest",
        f"{answered} of {FLOOR_MINTS}, {min(route.seconds):.2f} to {max(route.seconds):.2f} s, "
        f"{route.threads_while_waiting} threads while all wait ({idle_threads} idle); the plain view: "
        f"{plain.statuses.count(200)}, {max(plain.seconds):.2f} s, {plain.threads_while_waiting} threads",
        f"{FLOOR_MINTS}, <= {FLOOR_BOUND_SECONDS:g} s",
        answered == FLOOR_MINTS and max(route.seconds) <= FLOOR_BOUND_SECONDS,
    )


def _upstream(running: ExitStack, bench: Bench, delay: str) -> Server:
    """The stand-in service answering after `delay` seconds, stopped when `running` closes."""
    from tests.bench.run_bench import SLOW_UPSTREAM, Server

    upstream = Server({**bench.environment, "SLOW_UPSTREAM_DELAY": delay}, SLOW_UPSTREAM)
    running.callback(upstream.stop)
    return upstream


def _site(running: ExitStack, bench: Bench, upstream: Server, command: list[str]) -> Server:
    """One worker of the site minting at `upstream`, served by `command`, stopped when `running` closes."""
    from tests.bench.run_bench import Server

    environment = {**bench.environment, "SPORTS_BASE_URL": upstream.url, "SPORTS_SANDBOX": "0"}
    site = Server({**environment, "SPORTS_API_KEY": bench.key, "WEB_CONCURRENCY": "1"}, command)
    running.callback(site.stop)
    return site


async def _burst(bench: Bench, site: Server, upstream: Server, path: str, count: int) -> Burst:
    """`count` fresh mints to `path` sent at once, watched through the stand-in's count of waiting requests."""
    from tests.bench.run_bench import FRESH_MINT, MINT_HEADERS

    limits = httpx2.Limits(max_connections=count)
    timeout = 3 * FLOOR_BOUND_SECONDS  # every wait has a bound, well past the row's target
    async with (
        httpx2.AsyncClient(cookies=bench.cookies, limits=limits, timeout=timeout) as client,
        httpx2.AsyncClient(timeout=timeout) as probe,  # its own connection: never queued behind the mints
    ):
        started = time.monotonic()

        async def mint() -> tuple[int, float]:
            response = await client.post(site.url + path, content=FRESH_MINT, headers=MINT_HEADERS)
            return response.status_code, time.monotonic() - started

        burst = asyncio.gather(*(mint() for _ in range(count)))
        threads = None
        while not burst.done():
            if (await probe.get(f"{upstream.url}/waiting")).json()["waiting"] >= count:
                threads = max(threads or 0, _threads(site.process.pid))
            await asyncio.sleep(0.05)
        answers = await burst
    return Burst([status for status, _ in answers], [seconds for _, seconds in answers], threads)


def _threads(pid: int) -> int:
    from tests.bench.run_bench import process_status

    return process_status(pid, "Threads")


def _describe(loads: list[wrk.Load], cpu_ms: list[float]) -> str:
    """Spread of the rates over the rounds, median p50/p99 latency, median CPU of the worker per request,
    and the requests that got no 2xx (a status, or a socket error wrk counted)."""
    rates = [load.rate for load in loads]
    p50 = statistics.median(load.p50_ms for load in loads)
    p99 = statistics.median(load.p99_ms for load in loads)
    cpu, failed = statistics.median(cpu_ms), sum(load.failed for load in loads)
    return f"[{min(rates):.0f}-{max(rates):.0f}] p50/p99 {p50:.0f}/{p99:.0f} ms, CPU {cpu:.1f} ms/req, {failed} failed"
