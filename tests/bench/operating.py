"""The metrics row of `make bench`: what counting costs the route. `make serve` (2 gunicorn workers,
prometheus_client's multiprocess mode) with SPORTS_METRICS on against the same with it off: every
request a fresh mint (`{"reason": "unauthorized"}`, the bench lifts the route's limit) in front of
the stand-in service (tests/slow_upstream.py, answering at once, so that the route's own work is
what is measured). Each mint is counted once and timed once. Target: on / off >= 0.97.

The machine is shared: other work takes the cores for seconds at a time, more than the difference
being measured. So in each round both servers are loaded at the same time, by one wrk each (32
connections), and share whatever the machine gives them alike; the row's ratio is the median of
the rounds' ratios (each round's two figures share its conditions; which server's load starts first
alternates), beside the median throughputs and the servers' CPU time per mint over all rounds. And,
measured apart in a process of its own, what counting one mint costs (its answer counted and timed, and its
`tokens.create` timed, in multiprocess mode), which no noise of the machine's can hide.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
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
            for number in range(ROUNDS * 3):
                order = list(servers) if number % 2 == 0 else list(reversed(servers))
                for name, result in zip(order, pool.map(lambda name: load(name, SECONDS), order), strict=True):
                    rates[name].append(result.rate)
                    mints[name] += result.requests - result.failed
            cpu = {name: cpu_seconds(server.process.pid) - cpu_before[name] for name, server in servers.items()}
        counted = _minted(servers["on"].url)
    finally:
        for server in (*servers.values(), upstream):
            server.stop()
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    ratio = statistics.median(ours / theirs for ours, theirs in zip(rates["on"], rates["off"], strict=True) if theirs)
    per_mint = {name: 1000 * cpu[name] / max(1, mints[name]) for name in servers}
    value = (
        f"{ratio:.3f} ({on:.0f} / {off:.0f} req/s; CPU per mint {per_mint['on']:.1f} / {per_mint['off']:.1f} ms,"
        f" of which counting {counting_cost(bench):.0f} us; {counted:.0f} mints counted)"
    )
    bench.row(measure, value, f">= {TARGET}", ratio >= TARGET)


COUNTING = """
import os, sys, tempfile, time
os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp()
import django
django.setup()
from django.conf import settings
settings.SPORTS_METRICS = True
from types import SimpleNamespace
from mintroute import metrics
metrics.count("minted")
started = time.perf_counter()
for _ in range(20_000):
    request = SimpleNamespace()
    metrics.start(request)
    metrics.count("minted", request)
    with metrics.upstream_call():
        pass
print(1e6 * (time.perf_counter() - started) / 20_000)
"""


def counting_cost(bench: Bench) -> float:
    """Microseconds that counting one mint takes (the answer, its time and the tokens.create time), in a process
    of its own in multiprocess mode."""
    from tests.bench.run_bench import ROOT

    completed = subprocess.run(  # noqa: S603 - this interpreter and a fixed script
        [sys.executable, "-c", COUNTING],
        cwd=ROOT,
        env=bench.environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return float(completed.stdout.strip().splitlines()[-1])


def _minted(url: str) -> float:
    """`minted` as /metrics adds it up over both workers (a check that the row counted at all)."""
    text = httpx2.get(f"{url}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith('sports_token_requests_total{outcome="minted"}'):
            return float(line.rpartition(" ")[2])
    return 0.0
