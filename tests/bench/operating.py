"""The metrics row of `make bench`: what counting costs the route. `make serve` (2 gunicorn workers,
prometheus_client's multiprocess mode) with SPORTS_METRICS on against the same with it off: every
request a fresh mint (`{"reason": "unauthorized"}`, the bench lifts the route's limit) in front of
the stand-in service (tests/slow_upstream.py, answering at once, so that the route's own work is
what is measured). Each mint is counted once and timed once. Target: on / off >= 0.97.

The machine is shared: other work takes the cores for seconds at a time, more than the difference
being measured. So in each round both servers are loaded at the same time, by one wrk each (32
connections), and share whatever the machine gives them alike; the row reports the median of the
rounds' throughputs, and the servers' CPU time per mint over all rounds beside it.
"""

from __future__ import annotations

import statistics
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import httpx2

from tests.bench import wrk

if TYPE_CHECKING:
    from tests.bench.run_bench import Bench

WORKERS = 2
CONNECTIONS = 32  # per server; the two run at once
TARGET = 0.97
ROUTE = "/api/sports-token"
WARM_UP_SECONDS = 1.0


def metrics_on_versus_off(bench: Bench) -> None:
    from tests.bench.run_bench import MAKE_SERVE, ROUNDS, SECONDS, SLOW_UPSTREAM, Server, cpu_seconds

    measure = (
        f"the route with metrics on vs off, make serve, {WORKERS} workers, wrk {CONNECTIONS} + {CONNECTIONS} at once"
    )
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
    mints = dict.fromkeys(servers, 0)

    def load(name: str, seconds: float) -> wrk.Load:
        return wrk.run(servers[name].url + ROUTE, seconds=seconds, connections=CONNECTIONS, script=script)

    try:
        with ThreadPoolExecutor(max_workers=len(servers)) as pool:
            list(pool.map(lambda name: load(name, WARM_UP_SECONDS), servers))
            cpu_before = {name: cpu_seconds(server.process.pid) for name, server in servers.items()}
            for _ in range(ROUNDS * 2):
                for name, result in zip(servers, pool.map(lambda name: load(name, SECONDS), servers), strict=True):
                    rates[name].append(result.rate)
                    mints[name] += result.requests - result.failed
            cpu = {name: cpu_seconds(server.process.pid) - cpu_before[name] for name, server in servers.items()}
        counted = _minted(servers["on"].url)
    finally:
        for server in (*servers.values(), upstream):
            server.stop()
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    per_mint = {name: 1000 * cpu[name] / max(1, mints[name]) for name in servers}
    value = (
        f"{on:.0f} / {off:.0f} req/s = {on / off:.3f}; CPU per mint {per_mint['on']:.1f} / {per_mint['off']:.1f} ms"
        f" ({counted:.0f} mints counted)"
    )
    bench.row(measure, value, f">= {TARGET}", on / off >= TARGET)


def _minted(url: str) -> float:
    """`minted` as /metrics adds it up over both workers (a check that the row counted at all)."""
    text = httpx2.get(f"{url}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith('sports_token_requests_total{outcome="minted"}'):
            return float(line.rpartition(" ")[2])
    return 0.0
