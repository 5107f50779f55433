"""`make bench`: how close the mint path and the sandbox get to their floor.

Starts its own servers on 127.0.0.1 (uvicorn, one process each: the sandbox as upstream,
the site in front of it), measures every row side by side in one run, interleaving the
things it compares, and prints one table. Every loop is bounded in count and in time.
docs/benchmarks.md explains the rows and records a run.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2

from config import serve
from tests import slow_upstream
from tests.bench import asgi, floor, operating, realtime, sharing, wrk

ROOT = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "300"))
SOAK_SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS", "60"))
SOAK_CLIENTS = 50
SERVING_WORKERS = 2
SOAK_MINT_RATE = 300  # per minute, per user and per client IP
CSRF = "b" * 32
FRESH_MINT = '{"reason": "unauthorized"}'  # the route mints upstream for every such request
MINT_HEADERS = {"X-CSRFToken": CSRF, "Content-Type": "application/json"}


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port


def resident_kib(pid: int) -> int:
    return process_status(pid, "VmRSS")


def process_status(pid: int, field: str) -> int:
    """A number from /proc/<pid>/status: `VmRSS` (KiB), `Threads`..."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def cpu_seconds(pid: int, *, tree: bool = True) -> float:
    """CPU time of the process and, with `tree`, every process under it (gunicorn's and uvicorn's workers)."""
    total = 0.0
    for member in (pid, *(descendants(pid) if tree else [])):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # it ended meanwhile
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


# Each started with `{port}` replaced by a free port (and HOST set to 127.0.0.1:{port}). The
# sandbox runs under the uvicorn command `make serve` gives its socket, serving the whole site here.
WHOLE_SITE = "config.asgi:application"
UVICORN = serve.socket_command("127.0.0.1:{port}", {"WEB_CONCURRENCY": "1"}, application=WHOLE_SITE)
MAKE_SERVE = [sys.executable, "-m", "config.serve"]  # what `make serve` runs, on HOST
SLOW_UPSTREAM = [*slow_upstream.command("{port}"), "--log-level", "warning"]


class Server:
    def __init__(self, environment: dict[str, str], command: list[str] = UVICORN) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [part.replace("{port}", str(self.port)) for part in command]
        environment = {**environment, "HOST": f"127.0.0.1:{self.port}"}
        self.process = subprocess.Popen(command, cwd=ROOT, env=environment)  # noqa: S603 - fixed commands
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx2.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx2.TransportError:
                time.sleep(0.2)
        raise RuntimeError("a benchmark server did not start within 30 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # an overloaded server may not finish its sockets in time
            self.process.kill()
            self.process.wait(timeout=10)


@contextmanager
def cpu_use(*pids: int) -> Iterator[dict[str, float]]:
    """Percent of one core used by each process (and by this loader) while the block runs."""
    use: dict[str, float] = {}
    started = time.monotonic()
    loader = os.getpid()  # this process alone: the servers it started are its children
    before = {pid: cpu_seconds(pid, tree=pid != loader) for pid in (loader, *pids)}
    yield use
    elapsed = time.monotonic() - started
    for pid, seconds in before.items():
        use[str(pid)] = 100 * (cpu_seconds(pid, tree=pid != loader) - seconds) / elapsed


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


async def throughput(url: str, make_request: Callable[[httpx2.AsyncClient], Any], concurrency: int = 8) -> float:
    """Completed 2xx requests per second over SECONDS, `concurrency` at a time."""
    deadline = time.monotonic() + SECONDS
    done = 0

    async def worker(client: httpx2.AsyncClient) -> None:
        nonlocal done
        while time.monotonic() < deadline:
            response = await make_request(client)
            if response.status_code < 300:
                done += 1

    async with httpx2.AsyncClient(base_url=url, timeout=10) as client:
        started = time.monotonic()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        return done / (time.monotonic() - started)


class Bench:
    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="sports-bench-"))
        self.environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.bench.settings",
            "DJANGO_ENV_FILE": "",
            "DJANGO_DEBUG": "0",  # production code paths: no query log, no static-file rescans
            "DJANGO_SECURE_SSL_REDIRECT": "0",  # plain HTTP on loopback
            "DJANGO_SECURE_COOKIES": "0",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_LOG_LEVEL": "ERROR",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_urlsafe(48),
            "DATABASE_URL": f"sqlite:///{self.workdir / 'bench.sqlite3'}",
            "REDIS_URL": "",
            # The bench lifts the route's limit (tests/bench/settings.py), so per-process counters
            # measure the same work as shared ones; the soak and the real-time rows set REDIS_URL.
            "DJANGO_SILENCED_SYSTEM_CHECKS": "mintroute.E006",
            "WEB_DRAIN_SECONDS": "0",  # each server stops at once: no proxy in front to drain for
        }
        self.rows: list[tuple[str, str, str, bool | None]] = []

    # --- setup --------------------------------------------------------------------------------

    def manage(self, *arguments: str, **extra: str) -> str:
        completed = subprocess.run(  # noqa: S603 - fixed interpreter and script
            [sys.executable, "manage.py", *arguments],
            cwd=ROOT,
            env={**self.environment, **extra},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return completed.stdout

    def start(self) -> None:
        self.manage("migrate", "--no-input")
        self.key = self.manage("sandbox_key", "create", "--account", "bench", "--tier", "business").splitlines()[-1]
        self.upstream = Server({**self.environment, "SPORTS_SANDBOX": "1", "SPORTS_BASE_URL": ""})
        site_environment = {**self.environment, "SPORTS_BASE_URL": self.upstream.url, "SPORTS_SANDBOX": "0"}
        self.site = Server({**site_environment, "SPORTS_API_KEY": self.key, "WEB_CONCURRENCY": "1"}, MAKE_SERVE)
        os.environ.update({**site_environment, "SPORTS_API_KEY": self.key})
        import django

        django.setup()
        from django.contrib.auth.models import User
        from django.test import Client

        browser = Client()
        browser.force_login(User.objects.create_user("bench"))
        self.cookies = {"sessionid": browser.cookies["sessionid"].value, "csrftoken": CSRF}

    def stop(self) -> None:
        self.site.stop()
        self.upstream.stop()

    def post_site(self, client: httpx2.Client | httpx2.AsyncClient, path: str) -> Any:
        return client.post(path, content=FRESH_MINT, headers=MINT_HEADERS)

    def fresh_mint_script(self) -> Path:
        """A wrk script that sends every request as a fresh mint of the benchmark's logged-in user."""
        cookie = f"sessionid={self.cookies['sessionid']}; csrftoken={CSRF}"
        return wrk.post_script(self.workdir / "mint.lua", FRESH_MINT, {**MINT_HEADERS, "Cookie": cookie})

    def envelope(self, method: str, params: dict[str, Any]) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}).encode()

    def row(self, measure: str, value: str, target: str, met: bool | None) -> None:
        self.rows.append((measure, value, target, met))

    # --- rows -----------------------------------------------------------------------------------

    def sdk_versus_raw_httpx2(self) -> None:
        from sportsproxy import SportsClient

        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        sdk_samples: list[float] = []
        raw_samples: list[float] = []
        with (
            SportsClient(self.key, base_url=self.upstream.url) as sdk,
            httpx2.Client(base_url=self.upstream.url) as raw,
        ):
            for number in range(SAMPLES):
                pair = [
                    (sdk_samples, lambda: sdk.tokens.create(ttl=600)),
                    (
                        raw_samples,
                        lambda: raw.post(
                            "/sdk/v1/rpc", content=self.envelope("tokens.create", {"ttl": 600}), headers=headers
                        ).json(),
                    ),
                ]
                for samples, call in pair if number % 2 else reversed(pair):
                    samples.append(timed(call))
        ratio = median_ms(sdk_samples) / median_ms(raw_samples)
        self.row(
            "SportsClient.tokens.create vs raw httpx2 POST, p50",
            f"{median_ms(sdk_samples):.2f} / {median_ms(raw_samples):.2f} ms = {ratio:.3f}",
            "<= 1.10",
            ratio <= 1.10,
        )

    def mint_latency(self) -> None:
        samples: dict[str, list[float]] = {"mint": [], "upstream": [], "session": []}
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        with (
            httpx2.Client(base_url=self.site.url, cookies=self.cookies) as site,
            httpx2.Client(base_url=self.upstream.url) as up,
        ):
            calls = {
                "mint": lambda: self.post_site(site, "/api/sports-token").raise_for_status(),
                "upstream": lambda: up.post(
                    "/sdk/v1/rpc", content=self.envelope("tokens.create", {"ttl": 600}), headers=headers
                ),
                "session": lambda: self.post_site(site, "/bench/session-only").raise_for_status(),
            }
            for number in range(SAMPLES):
                order = list(calls) if number % 2 else list(reversed(calls))
                for name in order:
                    samples[name].append(timed(calls[name]))
        floor = median_ms(samples["upstream"]) + median_ms(samples["session"])
        ratio = median_ms(samples["mint"]) / floor
        self.row(
            "mint route p50 vs upstream tokens.create p50 + bare session view p50",
            f"{median_ms(samples['mint']):.2f} / ({median_ms(samples['upstream']):.2f}"
            f" + {median_ms(samples['session']):.2f}) ms = {ratio:.3f}",
            "<= 1.15",
            ratio <= 1.15,
        )

    def mint_throughput(self) -> None:
        results: dict[str, list[float]] = {"/api/sports-token": [], "/bench/raw-mint": []}
        cpu: dict[str, list[float]] = {"loader": [], "site": [], "upstream": []}

        async def measure(path: str) -> float:
            return await throughput(self.site.url, lambda client: self._async_post(client, path))

        for number in range(ROUNDS * 2):
            path = list(results)[number % 2]
            with cpu_use(self.site.process.pid, self.upstream.process.pid) as use:
                results[path].append(asyncio.run(measure(path)))
            cpu["loader"].append(use[str(os.getpid())])
            cpu["site"].append(use[str(self.site.process.pid)])
            cpu["upstream"].append(use[str(self.upstream.process.pid)])
        mint, bare = (statistics.median(values) for values in results.values())
        ratio = mint / bare
        self.row(
            "mint route throughput vs bare session view + raw upstream POST",
            f"{mint:.0f} / {bare:.0f} req/s = {ratio:.3f}",
            ">= 0.80",
            ratio >= 0.80,
        )
        self.cpu = {name: statistics.median(values) for name, values in cpu.items()}

    async def _async_post(self, client: httpx2.AsyncClient, path: str) -> httpx2.Response:
        return await client.post(path, content=FRESH_MINT, headers=MINT_HEADERS, cookies=self.cookies)

    def queries_and_cache_operations(self) -> None:
        from django.core.cache import caches
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        counted = caches["default"]
        operations: list[str] = []
        for name in ("get", "set", "add", "incr", "decr", "delete", "get_many", "set_many", "touch", "has_key"):
            original = getattr(counted, name)
            setattr(
                counted,
                name,
                (lambda method, op: lambda *a, **k: (operations.append(op), method(*a, **k))[1])(original, name),
            )
        browser = Client(HTTP_HOST="127.0.0.1")
        browser.cookies.load(self.cookies)
        results = {}
        for label, body in (("fresh", '{"reason": "unauthorized"}'), ("reused", "")):
            operations.clear()
            with CaptureQueriesContext(connection) as queries:
                response = browser.post("/api/sports-token", body, "application/json", HTTP_X_CSRFTOKEN=CSRF)
            assert response.status_code == 200, response.status_code
            results[label] = (len(queries), len(operations))
            if os.environ.get("BENCH_VERBOSE"):
                print(label, [query["sql"][:60] for query in queries.captured_queries], operations, file=sys.stderr)
        fresh, reused = results["fresh"], results["reused"]
        met = all(queries <= 2 and cache_ops <= 4 for queries, cache_ops in results.values())
        self.row(
            "database queries / cache operations per mint request (fresh, reused)",
            f"{fresh[0]} / {fresh[1]}, {reused[0]} / {reused[1]}",
            "<= 2 / <= 4",
            met,
        )

    def upstream_calls_and_connections(self) -> None:
        from django.test import Client

        from sportsproxy.django.shared import get_client

        client = get_client()
        transport = client._http._transport
        sent: list[str] = []
        original = transport.handle_request

        def counting(request: httpx2.Request) -> httpx2.Response:
            sent.append(request.url.path)
            return original(request)

        transport.handle_request = counting  # type: ignore[method-assign]
        browser = Client(HTTP_HOST="127.0.0.1")
        browser.cookies.load(self.cookies)
        mint = lambda body: browser.post("/api/sports-token", body, "application/json", HTTP_X_CSRFTOKEN=CSRF)  # noqa: E731
        mint('{"reason": "unauthorized"}')  # warm-up: the pool opens its connection
        connections_before = {id(connection) for connection in transport._pool.connections}
        sent.clear()
        fresh_mints = 20
        for _ in range(fresh_mints):
            mint('{"reason": "unauthorized"}')
        fresh_calls = len(sent) / fresh_mints
        sent.clear()
        for _ in range(fresh_mints):
            mint("")
        reused_calls = len(sent) / fresh_mints
        new_connections = len({id(connection) for connection in transport._pool.connections} - connections_before)
        self.row(
            "upstream calls per mint (fresh / reused); new TCP connections after warm-up",
            f"{fresh_calls:g} / {reused_calls:g}; {new_connections}",
            "1 / 0 and 0",
            fresh_calls == 1 and reused_calls == 0 and new_connections == 0,
        )

    def sandbox_listing(self) -> None:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from sportsproxy import SportsClient
        from sportsproxy.sandbox.rpc.dispatch import handle_http

        with SportsClient(self.key, base_url=self.upstream.url) as sdk:
            token = sdk.tokens.create(ttl=3600).token
        body = self.envelope("matches.list", {"limit": 20})
        with CaptureQueriesContext(connection) as queries:
            answer = handle_http(body, authorization=f"Bearer {token}", origin=None)
        assert "result" in answer, answer.get("error")

        results: dict[str, list[float]] = {"list": [], "healthz": []}
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def listing(client: httpx2.AsyncClient) -> Any:
            return client.post("/sdk/v1/rpc", content=body, headers=headers)

        for number in range(ROUNDS * 2):
            name = list(results)[number % 2]
            request = listing if name == "list" else (lambda client: client.get("/healthz"))
            results[name].append(asyncio.run(throughput(self.upstream.url, request)))
        listed, health = (statistics.median(values) for values in results.values())
        ratio = listed / health
        self.row(
            "sandbox matches.list with a JWT: DB queries; throughput vs /healthz",
            f"{len(queries)}; {listed:.0f} / {health:.0f} req/s = {ratio:.3f}",
            "0, >= 0.5",
            len(queries) == 0 and ratio >= 0.5,
        )

    def real_time(self) -> None:
        """Issue 15's rows: see tests/bench/realtime.py."""
        target = "p50 <= 50, p99 <= 250 ms, 100 %"
        value, met = realtime.fan_out(self, self.upstream, [self.upstream])
        self.row(f"WebSocket fan-out, {realtime.SUBSCRIBERS} subscribers, one process", value, target, met)
        value, met = realtime.idle_sockets(self, self.upstream)
        self.row(f"{realtime.IDLE_SOCKETS} idle authenticated sockets, one process", value, "CPU <= 5 %", met)
        why_not = realtime.redis_available()
        if why_not is not None:
            self.row("WebSocket rows across two processes (Redis)", why_not, target, None)
            return
        for layer, backend in realtime.LAYERS.items():
            shared = {**self.environment, "REDIS_URL": realtime.REDIS_URL, "SPORTS_SANDBOX": "1"}
            shared |= {"SPORTS_BASE_URL": "", "BENCH_CHANNEL_LAYER": backend}
            publisher = Server({**shared, "SPORTS_SANDBOX_EVENTS": "1"})
            receiver = Server({**shared, "SPORTS_SANDBOX_EVENTS": "0"})
            try:
                value, met = realtime.fan_out(self, publisher, [publisher, receiver])
                self.row(
                    f"WebSocket fan-out, {realtime.SUBSCRIBERS} subscribers over two processes, {layer}",
                    value,
                    target,
                    met,
                )
                if layer == realtime.CONFIGURED_LAYER:
                    value, met = realtime.revocation(self, [publisher, receiver])
                    self.row(f"revocation to close across two processes ({layer})", value, "p99 <= 2 s", met)
            finally:
                publisher.stop()
                receiver.stop()
                realtime.redis_available()  # empties the benchmark's Redis database

    def serving(self) -> None:
        """Issue 16: what `make serve` runs against gunicorn gthread serving the same code, same
        worker and thread counts, with wrk as the load generator, in interleaved rounds; and, for
        reference, uvicorn as docs/deploy.md ran it before."""
        why_not = wrk.missing()
        if why_not is not None:
            self.row("serving: make serve vs gunicorn gthread", why_not, "", None)
            return
        upstream = Server({**self.environment, "SLOW_UPSTREAM_DELAY": "0.05"}, SLOW_UPSTREAM)
        environment = {**self.environment, "SPORTS_BASE_URL": upstream.url, "SPORTS_SANDBOX": "0"}
        environment |= {"SPORTS_API_KEY": self.key, "WEB_CONCURRENCY": str(SERVING_WORKERS)}
        peer_command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", "127.0.0.1:{port}"]
        peer_command += ["--worker-class", "gthread", "--workers", str(SERVING_WORKERS), "--threads", "100"]
        peer_command += ["--no-control-socket", "--log-level", "warning"]
        # uvicorn serving everything, as docs/deploy.md ran it before make serve
        previous = serve.socket_command(
            "127.0.0.1:{port}", {"WEB_CONCURRENCY": str(SERVING_WORKERS)}, application=WHOLE_SITE
        )
        servers = {
            "make serve": Server(environment, MAKE_SERVE),
            "gunicorn gthread": Server(environment, peer_command),
            "uvicorn": Server(environment, previous),
        }
        script = self.fresh_mint_script()
        rates: dict[tuple[str, str], list[float]] = {}
        try:
            for number in range(ROUNDS * 2):
                names = list(servers) if number % 2 == 0 else list(reversed(servers))
                for name in names:
                    for path, path_script in (("/api/sports-token", script), ("/healthz", None)):
                        load = wrk.run(servers[name].url + path, seconds=SECONDS, script=path_script)
                        rates.setdefault((name, path), []).append(load.rate)
        finally:
            for server in (*servers.values(), upstream):
                server.stop()
        for path, target in (("/api/sports-token", 1.0), ("/healthz", 0.8)):
            ours, peer, before = (statistics.median(rates[(name, path)]) for name in servers)
            self.row(
                f"serving {path}, {SERVING_WORKERS} workers, 64 clients (wrk): make serve vs gunicorn gthread",
                f"{ours:.0f} / {peer:.0f} req/s = {ours / peer:.3f} (uvicorn as before: {before:.0f})",
                f">= {target}",
                ours / peer >= target,
            )

    def asgi_route(self) -> None:
        """Issues 21 and 28: see tests/bench/asgi.py."""
        asgi.route_versus_plain_view(self)

    def asgi_floor(self) -> None:
        asgi.floor(self)

    def asgi_burst(self) -> None:
        asgi.burst(self)

    def browser_client(self) -> None:
        completed = subprocess.run(  # noqa: S603 - fixed script
            ["node", str(ROOT / "tests/bench/browser_client.mjs")],  # noqa: S607 - node from PATH, as make test
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        result = json.loads(completed.stdout)
        self.row(
            "browser client: mints for 100 concurrent calls on an expired token; per refresh across 5 tabs",
            f"{result['concurrentCallMints']}; {result['fiveTabMintsPerRefresh']:g}",
            "1 and 1",
            result["concurrentCallMints"] == 1 and result["fiveTabMintsPerRefresh"] == 1,
        )

    def soak(self) -> None:
        """SOAK_SECONDS of 50 concurrent clients: half on the mint route, half on the RPC endpoint."""
        site = Server({**self.environment, "SPORTS_BASE_URL": self.upstream.url, "SPORTS_SANDBOX": "0",
                       "SPORTS_API_KEY": self.key, "BENCH_TOKEN_RATE": f"{SOAK_MINT_RATE}/m"})  # fmt: skip
        rpc_key = self.manage("sandbox_key", "create", "--account", "soak", "--tier", "free").splitlines()[-1]
        rpm = 60  # the free tier's requests per minute
        try:
            self._soak(site, rpc_key, rpm)
        finally:
            site.stop()

    def _soak(self, site: Server, rpc_key: str, rpm: int) -> None:
        statuses: dict[str, list[int]] = {"mint": [], "rpc": []}
        rpc_answers: list[str] = []
        connection_errors: list[str] = []
        body = self.envelope("matches.list", {"limit": 5})

        async def warm_up() -> None:
            async with httpx2.AsyncClient(base_url=site.url, cookies=self.cookies) as client:
                await self._async_post(client, "/api/sports-token")

        asyncio.run(warm_up())
        servers = (("site", site), ("upstream", self.upstream))
        memory_before: dict[str, int] = {}
        # The sandbox counts clock minutes: start just after one begins so the soak spans whole windows.
        time.sleep((60 - datetime.now().second) % 60 + 0.5)

        async def run() -> None:
            deadline = time.monotonic() + SOAK_SECONDS

            async def minter(client: httpx2.AsyncClient) -> None:
                while time.monotonic() < deadline:
                    try:
                        statuses["mint"].append((await self._async_post(client, "/api/sports-token")).status_code)
                    except httpx2.TransportError:  # a keep-alive connection closed under us: count it, go on
                        connection_errors.append("mint")

            async def caller(client: httpx2.AsyncClient) -> None:
                while time.monotonic() < deadline:
                    try:
                        response = await client.post(
                            "/sdk/v1/rpc",
                            content=body,
                            headers={"Authorization": f"Bearer {rpc_key}", "Content-Type": "application/json"},
                        )
                    except httpx2.TransportError:
                        connection_errors.append("rpc")
                        continue
                    statuses["rpc"].append(response.status_code)
                    answer = response.json()
                    rpc_answers.append("result" if "result" in answer else answer["error"]["code"])

            async def baseline() -> None:
                # Memory is compared from a warm state: pools, caches and threads exist by then.
                await asyncio.sleep(SOAK_SECONDS / 4)
                memory_before.update({name: resident_kib(server.process.pid) for name, server in servers})

            async with (
                httpx2.AsyncClient(base_url=site.url, timeout=30) as to_site,
                httpx2.AsyncClient(base_url=self.upstream.url, timeout=30) as to_upstream,
            ):
                half = SOAK_CLIENTS // 2
                await asyncio.gather(
                    baseline(), *[minter(to_site) for _ in range(half)], *[caller(to_upstream) for _ in range(half)]
                )

        started = time.time()
        asyncio.run(run())
        ended = time.time()
        memory_after = {name: resident_kib(server.process.pid) for name, server in servers}
        server_errors = sum(status >= 500 for values in statuses.values() for status in values)
        windows = int(ended // 60) - int(started // 60) + 1  # clock minutes the soak touched
        rpc_results = rpc_answers.count("result")
        refused_otherwise = [answer for answer in rpc_answers if answer not in ("result", "rate_limited")]
        mint_ok = statuses["mint"].count(200)
        growth = {
            name: 100 * (memory_after[name] - memory_before[name]) / memory_before[name] for name in memory_before
        }
        self.row(
            f"soak {SOAK_SECONDS:g} s, {SOAK_CLIENTS} clients: 5xx answers",
            f"{server_errors} of {sum(map(len, statuses.values()))} ({len(connection_errors)} connections reset)",
            "0",
            server_errors == 0,
        )
        self.row(
            f"soak: RPC results at the free tier ({rpm}/min, {windows} clock minute(s)); other errors",
            f"{rpc_results} of {len(rpc_answers)}; {len(refused_otherwise)}",
            f"{rpm * windows}; 0",
            rpc_results == rpm * windows and not refused_otherwise,
        )
        self.row(
            f"soak: mint-route 200s at {SOAK_MINT_RATE}/min per user and per IP (windows offset per key)",
            f"{mint_ok} of {len(statuses['mint'])}, the rest 429: {statuses['mint'].count(429)}",
            f"<= {SOAK_MINT_RATE * (windows + 1)}",
            mint_ok <= SOAK_MINT_RATE * (windows + 1)
            and mint_ok + statuses["mint"].count(429) == len(statuses["mint"]),
        )
        self.row(
            "soak: resident memory growth from 1/4 of the soak to its end (site, upstream)",
            f"{growth['site']:.1f} %, {growth['upstream']:.1f} %",
            "< 10 %",
            all(value < 10 for value in growth.values()),
        )

    def metrics_cost(self) -> None:
        """Issue 36's row: see tests/bench/operating.py."""
        operating.metrics_on_versus_off(self)

    def cached_answers(self) -> None:
        """Issue 45's rows: see tests/bench/floor.py."""
        floor.rows(self)

    def token_sharing(self) -> None:
        """Issue 29's rows: see tests/bench/sharing.py."""
        for row in sharing.rows():
            self.row(*row)

    # --- report ---------------------------------------------------------------------------------

    def report(self) -> str:
        widths = [
            max(len(str(row[column])) for row in [("measure", "value", "target", ""), *self.rows])
            for column in range(3)
        ]
        lines = [f"{'measure':<{widths[0]}}  {'value':<{widths[1]}}  {'target':<{widths[2]}}  met"]
        lines.append("-" * len(lines[0]))
        for measure, value, target, met in self.rows:
            verdict = "-" if met is None else ("yes" if met else "NO")
            lines.append(f"{measure:<{widths[0]}}  {value:<{widths[1]}}  {target:<{widths[2]}}  {verdict}")
        cpu = getattr(self, "cpu", None)
        if cpu:
            lines.append(
                f"CPU during the throughput rows (% of one core): loader {cpu['loader']:.0f}, "
                f"site {cpu['site']:.0f}, upstream {cpu['upstream']:.0f}; {os.cpu_count()} cores"
            )
        return "\n".join(lines)


def main() -> None:
    bench = Bench()
    measures = [
        bench.sdk_versus_raw_httpx2,
        bench.mint_latency,
        bench.mint_throughput,
        bench.queries_and_cache_operations,
        bench.upstream_calls_and_connections,
        bench.sandbox_listing,
        bench.serving,
        bench.asgi_route,
        bench.asgi_floor,
        bench.asgi_burst,
        bench.real_time,
        bench.browser_client,
        bench.soak,
        bench.token_sharing,
        bench.metrics_cost,
        bench.cached_answers,
    ]
    names = [measure.__name__ for measure in measures]
    chosen = [name for name in os.environ.get("BENCH_ONLY", "").split(",") if name] or names
    if unknown := sorted(set(chosen) - set(names)):
        sys.exit(f"BENCH_ONLY names {', '.join(unknown)}: choose among {', '.join(names)}")
    bench.start()
    try:
        for measure in measures:
            if measure.__name__ in chosen:
                print(f"... {measure.__name__}", file=sys.stderr, flush=True)
                measure()
    finally:
        bench.stop()
    print(bench.report())


if __name__ == "__main__":
    main()
