"""The floor row of `make bench`: what the route's answers that need no call to the service cost,
against a bare session-gated POST view answering a small JSON through the same middleware (the floor).

Two kinds of such answer: in "login" mode the token remembered for this login (its cookie), in
"site" mode the site's token (the cache). Measured two ways, side by side:

- in one process (`python -m tests.bench.floor`, production settings, the project's WSGI handler
  called directly, the site's cache in a Redis of the row's own): CPU per answer of each kind in
  interleaved rounds, and the round trips to Redis each answer makes (counted at redis-py's socket:
  one per command or pipeline sent). `--profile` prints where each kind's time goes (cProfile);
- under `make serve` (2 gunicorn workers), one server per mode, loaded by wrk in interleaved rounds:
  the route's throughput against the floor view's on the same server, and each server's CPU per
  answer.

Targets: CPU per answer at most 1.4 times the floor's, throughput at least 0.7 of the floor's, at most
three round trips to Redis per answer, in both modes. docs/benchmarks.md records a run.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.bench import wrk

if TYPE_CHECKING:
    from tests.bench.run_bench import Bench

MODES = ("login", "site")
KINDS = ("floor", *MODES)
FLOOR = "/bench/session-only"
ROUTE = "/api/sports-token"
CSRF = "b" * 32
CPU_TARGET = 1.4
THROUGHPUT_TARGET = 0.7
ROUND_TRIPS_TARGET = 3
WORKERS = 2
CONNECTIONS = 32
# In one process: short rounds, many of them, so that each round's kinds share the machine's conditions.
IN_PROCESS_ROUNDS = int(os.environ.get("BENCH_FLOOR_ROUNDS", "40"))
IN_PROCESS_ANSWERS = int(os.environ.get("BENCH_FLOOR_ANSWERS", "400"))  # per kind and round


# --- in one process ---------------------------------------------------------------------------------


@dataclass
class Measured:
    """One kind's figures in one process: CPU ms per answer (median of the rounds), round trips per answer."""

    cpu_ms: float
    round_trips: float


class RoundTrips:
    """Counts what redis-py sends: one round trip per command, pipeline or script sent to Redis."""

    def __init__(self) -> None:
        self.count = 0

    @contextmanager
    def counting(self) -> Iterator[None]:
        from redis.connection import AbstractConnection

        original = AbstractConnection.send_packed_command

        def send(connection: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            original(connection, command, check_health)

        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        try:
            yield
        finally:
            AbstractConnection.send_packed_command = original  # type: ignore[method-assign]


class Caller:
    """A logged-in browser calling the project's WSGI application directly (no server, no socket)."""

    def __init__(self, application: Any, session_id: str) -> None:
        self.application = application
        self.cookies = {"sessionid": session_id, "csrftoken": CSRF}

    def post(self, path: str, body: bytes = b"") -> tuple[int, bytes, list[tuple[str, str]]]:
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_COOKIE": "; ".join(f"{name}={value}" for name, value in self.cookies.items()),
            "HTTP_X_CSRFTOKEN": CSRF,
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0),
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        started: list[Any] = []
        chunks = self.application(environ, lambda status, headers, *rest: started.extend((status, headers)))
        try:
            content = b"".join(chunks)
        finally:
            chunks.close()  # request_finished: what a server's end of the request runs
        return int(started[0].split()[0]), content, started[1]


def in_process(*, rounds: int, answers: int, profile: bool) -> dict[str, Any]:
    """Run in a process of its own, with the environment run_bench gives it (after django.setup())."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from config.wsgi import application

    call_command("migrate", verbosity=0)
    browser = Client()
    user, _ = User.objects.get_or_create(username="bench-floor")
    browser.force_login(user)
    caller = Caller(application, browser.cookies["sessionid"].value)

    def ask(kind: str) -> Callable[[], None]:
        path = FLOOR if kind == "floor" else ROUTE

        def once() -> None:
            status, _, _ = caller.post(path)
            if status != 200:
                raise RuntimeError(f"{kind}: {path} answered {status}")

        return once

    # A token for each mode: this login's cookie ("login" mode), the site's token in the cache ("site").
    settings.SPORTS_TOKEN_SHARING = "login"
    status, content, headers = caller.post(ROUTE)
    if status != 200:
        raise RuntimeError(f"the first mint answered {status}: {content!r}")
    cookies = [value.strip() for name, value in headers if name == "Set-Cookie"]
    remembered = next(value for value in cookies if value.startswith("sports_token="))
    caller.cookies["sports_token"] = remembered.split(";", 1)[0].split("=", 1)[1]
    settings.SPORTS_TOKEN_SHARING = "site"
    if caller.post(ROUTE)[0] != 200:
        raise RuntimeError("the site's first mint failed")

    upstream = _count_upstream_calls()
    cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for number in range(rounds):
        order = KINDS if number % 2 == 0 else tuple(reversed(KINDS))
        for kind in order:
            settings.SPORTS_TOKEN_SHARING = "site" if kind == "site" else "login"
            once = ask(kind)
            once()  # the mode's first answer after a switch pays for nothing the others do not
            started = time.process_time()
            for _ in range(answers):
                once()
            cpu[kind].append(1000 * (time.process_time() - started) / answers)
    if upstream():
        raise RuntimeError(f"{upstream()} answers called the service: the row measures answers that need no mint")

    round_trips: dict[str, float] = {}
    counter = RoundTrips()
    with counter.counting():
        for kind in KINDS:
            settings.SPORTS_TOKEN_SHARING = "site" if kind == "site" else "login"
            once = ask(kind)
            once()
            counter.count = 0
            for _ in range(100):
                once()
            round_trips[kind] = counter.count / 100

    result: dict[str, Any] = {
        kind: {
            "cpu_ms": statistics.median(cpu[kind]),
            # each round's kinds side by side: the median of the rounds' ratios to the floor
            "ratio": statistics.median(ours / floor for ours, floor in zip(cpu[kind], cpu["floor"], strict=True)),
            "round_trips": round_trips[kind],
        }
        for kind in KINDS
    }
    if profile:
        result["profiles"] = {}
        for kind in KINDS:
            settings.SPORTS_TOKEN_SHARING = "site" if kind == "site" else "login"
            once = ask(kind)
            profiler = cProfile.Profile(time.process_time)  # CPU, not the waits for Redis or the database
            profiler.enable()
            for _ in range(answers):
                once()
            profiler.disable()
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)
            stats.sort_stats("cumulative").print_stats(45)
            stats.sort_stats("tottime").print_stats(30)
            result["profiles"][kind] = text.getvalue()
    return result


def _count_upstream_calls() -> Callable[[], int]:
    """How many tokens.create the SDK's shared client sends from now on."""
    from sportsproxy.django.shared import get_client

    transport = get_client()._http._transport
    sent: list[object] = []
    original = transport.handle_request

    def counting(request: Any) -> Any:
        sent.append(request)
        return original(request)

    transport.handle_request = counting
    return lambda: len(sent)


def measure_in_process(environment: dict[str, str], *, profile: bool = False) -> dict[str, Any]:
    """in_process, run by this interpreter in a process of its own with `environment`."""
    from tests.bench.run_bench import ROOT

    command = [sys.executable, "-m", "tests.bench.floor"]
    completed = subprocess.run(  # noqa: S603 - this interpreter and a fixed module
        [*command, *(["--profile"] if profile else [])],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the in-process floor measure failed:\n{completed.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


# --- under make serve ------------------------------------------------------------------------------


def rows(bench: Bench) -> None:
    """The row's lines: in one process, then under `make serve` (after run_bench's start())."""
    from tests.bench.run_bench import MAKE_SERVE, ROUNDS, SECONDS, SLOW_UPSTREAM, Server, cpu_seconds
    from tests.redis_server import RedisServer

    redis_server = RedisServer()
    redis_server.start()
    upstream = Server({**bench.environment, "SLOW_UPSTREAM_DELAY": "0"}, SLOW_UPSTREAM)
    environment = {**bench.environment, "SPORTS_BASE_URL": upstream.url, "SPORTS_SANDBOX": "0"}
    environment |= {"SPORTS_API_KEY": bench.key, "REDIS_URL": redis_server.url}
    environment["DJANGO_SILENCED_SYSTEM_CHECKS"] = ""
    servers: dict[str, Server] = {}
    try:
        measured = measure_in_process(environment)
        for mode in MODES:
            figures = {kind: measured[kind] for kind in ("floor", mode)}
            ratio = figures[mode]["ratio"]
            trips = figures[mode]["round_trips"]
            bench.row(
                f"cached answer, {mode!r} mode, one process: CPU per answer vs the floor; Redis round trips",
                f"{figures[mode]['cpu_ms']:.3f} / {figures['floor']['cpu_ms']:.3f} ms, ratio {ratio:.2f}; "
                f"{trips:g} (floor {figures['floor']['round_trips']:g})",
                f"<= {CPU_TARGET}; <= {ROUND_TRIPS_TARGET}",
                ratio <= CPU_TARGET and trips <= ROUND_TRIPS_TARGET,
            )
        why_not = wrk.missing()
        if why_not is not None:
            bench.row("cached answers under make serve vs the floor view", why_not, "", None)
            return
        environment |= {"WEB_CONCURRENCY": str(WORKERS)}
        environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
        for mode in MODES:
            servers[mode] = Server({**environment, "SPORTS_TOKEN_SHARING": mode}, MAKE_SERVE)
        scripts = {mode: _scripts(bench, servers[mode].url, mode) for mode in MODES}
        rates: dict[tuple[str, str], list[float]] = {}
        answered: dict[tuple[str, str], int] = {}
        cpu: dict[tuple[str, str], float] = {}
        for mode in MODES:  # warm-up: each worker's connections and imports
            for path in (FLOOR, ROUTE):
                wrk.run(servers[mode].url + path, seconds=1, connections=CONNECTIONS, script=scripts[mode][path])
        for number in range(ROUNDS * 3):
            for mode in MODES if number % 2 == 0 else tuple(reversed(MODES)):
                for path in (FLOOR, ROUTE) if number % 2 == 0 else (ROUTE, FLOOR):
                    pid = servers[mode].process.pid
                    before = cpu_seconds(pid)
                    load = wrk.run(servers[mode].url + path, seconds=SECONDS, connections=CONNECTIONS,
                                   script=scripts[mode][path])  # fmt: skip
                    if load.failed:
                        raise RuntimeError(f"{load.failed} answers of {path} ({mode} mode) were not 2xx")
                    cpu[(mode, path)] = cpu.get((mode, path), 0.0) + cpu_seconds(pid) - before
                    answered[(mode, path)] = answered.get((mode, path), 0) + load.requests
                    rates.setdefault((mode, path), []).append(load.rate)
        for mode in MODES:
            route, floor = (statistics.median(rates[(mode, path)]) for path in (ROUTE, FLOOR))
            ratio = statistics.median(
                ours / theirs for ours, theirs in zip(rates[(mode, ROUTE)], rates[(mode, FLOOR)], strict=True)
            )
            per_answer = {path: 1000 * cpu[(mode, path)] / max(1, answered[(mode, path)]) for path in (ROUTE, FLOOR)}
            bench.row(
                f"cached answer, {mode!r} mode, make serve ({WORKERS} workers, wrk {CONNECTIONS}): "
                "throughput vs the floor view",
                f"{route:.0f} / {floor:.0f} req/s = {ratio:.2f} (CPU per answer {per_answer[ROUTE]:.2f} / "
                f"{per_answer[FLOOR]:.2f} ms = {per_answer[ROUTE] / per_answer[FLOOR]:.2f})",
                f">= {THROUGHPUT_TARGET}",
                ratio >= THROUGHPUT_TARGET,
            )
    finally:
        for server in (*servers.values(), upstream):
            server.stop()
        redis_server.stop()


def _scripts(bench: Bench, url: str, mode: str) -> dict[str, Path]:
    """wrk scripts for the floor view and the route, with this mode's token in place (one mint first)."""
    import httpx2

    cookies = {"sessionid": bench.cookies["sessionid"], "csrftoken": CSRF}
    headers = {"X-CSRFToken": CSRF, "Content-Type": "application/json"}
    answer = httpx2.post(url + ROUTE, content=b"", headers=headers, cookies=cookies, timeout=10)
    answer.raise_for_status()
    if mode == "login":
        cookies["sports_token"] = answer.cookies["sports_token"]
    cookie = "; ".join(f"{name}={value}" for name, value in cookies.items())
    named = {FLOOR: "floor", ROUTE: "route"}
    return {
        path: _post_script(bench.workdir / f"{mode}-{named[path]}.lua", {**headers, "Cookie": cookie}) for path in named
    }


def _post_script(path: Path, headers: dict[str, str]) -> Path:
    """A wrk script that POSTs an empty body with `headers` (values as Lua long strings: a signed cookie
    holds quotes and backslashes)."""
    lines = ['wrk.method = "POST"', 'wrk.body = ""']
    lines += [f'wrk.headers["{name}"] = [==[{value}]==]' for name, value in headers.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=IN_PROCESS_ROUNDS)
    parser.add_argument("--answers", type=int, default=IN_PROCESS_ANSWERS)
    parser.add_argument("--profile", action="store_true")
    arguments = parser.parse_args()
    import django

    django.setup()
    result = in_process(rounds=arguments.rounds, answers=arguments.answers, profile=arguments.profile)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
