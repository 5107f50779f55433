"""The metrics row of `make bench`: what counting costs the route. `make serve` (2 gunicorn workers,
prometheus_client's multiprocess mode) with SPORTS_METRICS on against the same with it off, side by
side, in interleaved rounds of wrk: every request a fresh mint (`{"reason": "unauthorized"}`, the
bench lifts the route's limit) in front of the stand-in service (tests/slow_upstream.py, answering
at once, so that the route's own work is what is measured). Each mint is counted once and timed
once. Target: on / off >= 0.97.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

import httpx2

from tests.bench import wrk

if TYPE_CHECKING:
    from tests.bench.run_bench import Bench

WORKERS = 2
TARGET = 0.97
ROUTE = "/api/sports-token"
WARM_UP_SECONDS = 1.0


def metrics_on_versus_off(bench: Bench) -> None:
    from tests.bench.run_bench import MAKE_SERVE, ROUNDS, SECONDS, SLOW_UPSTREAM, Server

    measure = f"the route with metrics on vs off, make serve, {WORKERS} workers, 64 clients (wrk)"
    why_not = wrk.missing()
    if why_not is not None:
        bench.row(measure, why_not, "", None)
        return
    upstream = Server({**bench.environment, "SLOW_UPSTREAM_DELAY": "0"}, SLOW_UPSTREAM)
    environment = {**bench.environment, "SPORTS_BASE_URL": upstream.url, "SPORTS_SANDBOX": "0"}
    environment |= {"SPORTS_API_KEY": bench.key, "WEB_CONCURRENCY": str(WORKERS)}
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)  # make serve makes its own
    servers = {
        "on": Server({**environment, "SPORTS_METRICS": "1"}, MAKE_SERVE),
        "off": Server({**environment, "SPORTS_METRICS": "0"}, MAKE_SERVE),
    }
    script = bench.fresh_mint_script()
    rates: dict[str, list[float]] = {name: [] for name in servers}
    try:
        for server in servers.values():
            wrk.run(server.url + ROUTE, seconds=WARM_UP_SECONDS, script=script)
        for number in range(ROUNDS * 2):
            for name in list(servers) if number % 2 == 0 else list(reversed(servers)):
                rates[name].append(wrk.run(servers[name].url + ROUTE, seconds=SECONDS, script=script).rate)
        counted = _minted(servers["on"].url)
    finally:
        for server in (*servers.values(), upstream):
            server.stop()
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    bench.row(
        measure,
        f"{on:.0f} / {off:.0f} req/s = {on / off:.3f} ({counted:.0f} mints counted)",
        f">= {TARGET}",
        on / off >= TARGET,
    )


def _minted(url: str) -> float:
    """`minted` as /metrics adds it up over both workers (a check that the row counted at all)."""
    text = httpx2.get(f"{url}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith('sports_token_requests_total{outcome="minted"}'):
            return float(line.rpartition(" ")[2])
    return 0.0
