"""The outage drill, as an operator would run it: what users see of each fault, and when the page comes.

`make drill` (or `.venv/bin/python -m tests.drill.outage`) builds, on this machine, what an operator runs:
`make serve` with 2 workers behind docs/deploy.md's nginx; PostgreSQL (a throwaway database on the tests'
server, TEST_DATABASE_URL) reached through a TCP proxy that can be cut; a Redis of its own; the service (the
standalone sandbox, its data kept across restarts) as a process of its own; Prometheus with the shipped
deploy/prometheus/ configuration and rules, scraping and evaluating every 5 s, and Alertmanager with the shipped
alertmanager.yml, its receivers pointed at a webhook that notes when each page arrives; and 20 logged-in users,
each a page running the real browser client with its default options in Node (users.mjs).

Then one fault at a time, each followed by a recovery (every user holding a token again, no alert firing or
pending, and a minute for Alertmanager to send the resolutions): in "login" mode the service killed for
3 minutes and frozen (SIGSTOP) for 2, Redis frozen then stopped for a minute each, PostgreSQL cut off as a
partition does (the proxy reads and drops) for 65 s; then, with make serve started again in "site" mode, the
service killed for 10.5 minutes. About an hour in all.

A user error is the moment a user's page holds no valid token (its token ended, or the mint route refused it for
good): what a page cannot hide. Refused answers the client rode out with the token it held are counted beside.
It prints one table (fault, first user error, page, alert, /readyz), and writes every record to
<folder>/drill.json. Needs nginx, prometheus, prometheus-alertmanager, redis-server and node on the PATH, and
the tests' PostgreSQL. Not part of `make test`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import psycopg
import yaml

from sportsproxy.testing import SportsSandbox, start_sandbox
from tests import stores
from tests.pager import Pager
from tests.production.cluster import PRODUCTION, PROJECT_ROOT, free_port
from tests.production.nginx import main_configuration, nginx_binary, site_configuration
from tests.production.tcp_proxy import TcpProxy, postgres_proxy
from tests.redis_server import RedisServer

USERS = 20
SCRAPE = PROJECT_ROOT / "deploy" / "prometheus" / "prometheus.yml"
ROUTING = PROJECT_ROOT / "deploy" / "prometheus" / "alertmanager.yml"
INTERVAL = "5s"  # Prometheus's scrape and evaluation
CALL_EVERY_SECONDS = 20  # each page calls the service this often
PROBE_EVERY_SECONDS = 1  # /readyz, as a load balancer asks it
START_SECONDS = 120  # every start here is bounded by this
RECOVERY_SECONDS = 420  # the bound on each recovery's waits (a burn-rate alert ends 5 min after the last refusal)
RESOLUTIONS_SECONDS = 70  # Alertmanager's group_interval (1 m) and a scrape: the resolutions sent


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


@contextlib.contextmanager
def serving(command: list[str], output: Path, **options: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A server run with `command` for the block, its output in `output`; SIGTERM to its group after, then SIGKILL."""
    with output.open("ab") as written:
        server = subprocess.Popen(  # noqa: S603 - this machine's programs, fixed arguments
            command, stdout=written, stderr=subprocess.STDOUT, start_new_session=True, **options
        )
    try:
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


def until(answered: Callable[[], bool], what: str, seconds: float = START_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(httpx2.TransportError, OSError):
            if answered():
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} within {seconds:g} s (its log is in the drill's folder)")
        time.sleep(0.5)


def program(*names: str, package: str) -> str:
    found = next(filter(None, map(shutil.which, names)), None)
    if found is None:
        raise SystemExit(f"{names[0]} is not installed: apt-get install {package}")
    return found


@dataclass
class Fault:
    name: str  # the table's row
    seconds: float
    begin: Callable[[Stack], None]
    end: Callable[[Stack], None]


@dataclass
class Stack:
    """One mode's site and everything around it, for the faults of one phase."""

    mode: str  # SPORTS_TOKEN_SHARING
    folder: Path
    accounts: list[dict[str, str]]
    service_data: Path
    database: str = field(default_factory=lambda: f"sports_drill_{secrets.token_hex(4)}")
    redis: RedisServer = field(default_factory=RedisServer)
    database_link: TcpProxy = field(default_factory=postgres_proxy)
    pager: Pager = field(default_factory=lambda: Pager(clock=time.time))
    service: SportsSandbox | None = None
    service_port: int = 0
    site_port: int = field(default_factory=free_port)
    nginx_port: int = field(default_factory=free_port)
    prometheus_port: int = field(default_factory=free_port)
    alertmanager_port: int = field(default_factory=free_port)
    metrics_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    users: list[dict[str, Any]] = field(default_factory=list)  # what users.mjs printed
    probes: list[dict[str, Any]] = field(default_factory=list)  # /readyz's answers
    _stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def site(self) -> str:
        return f"http://127.0.0.1:{self.site_port}"

    @property
    def front(self) -> str:
        return f"http://127.0.0.1:{self.nginx_port}"

    def start_service(self) -> None:
        self.service = start_sandbox(
            "--data", str(self.service_data), "--tier", "business", port=self.service_port
        )  # --data: its keys and signing key the same after a restart
        self.service_port = urlsplit(self.service.base_url).port or 0

    def kill_service(self) -> None:
        assert self.service is not None
        self.service._process.kill()
        self.service._process.wait(timeout=10)

    def signal_service(self, number: signal.Signals) -> None:
        assert self.service is not None
        os.kill(self.service.pid, number)

    def environment(self, api_key: str) -> dict[str, str]:
        environment = {
            **os.environ,
            **PRODUCTION,
            "DJANGO_ENV_FILE": "",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DATABASE_URL": stores.postgres_url(self.database, port=self.database_link.port),
            "REDIS_URL": self.redis.url,
            "SPORTS_SANDBOX": "0",
            "SPORTS_BASE_URL": f"http://127.0.0.1:{self.service_port}",
            "SPORTS_API_KEY": api_key,
            "SPORTS_METRICS": "1",
            "SPORTS_TRUSTED_PROXY_COUNT": "1",  # behind nginx, as docs/deploy.md sets it
            # With a trusted proxy on this machine, loopback alone is an unknown client: Prometheus sends the token
            # (docs/operations.md, "The metrics").
            "SPORTS_METRICS_TOKEN": self.metrics_token,
            "SPORTS_TOKEN_SHARING": self.mode,
            "WEB_CONCURRENCY": "2",
            "HOST": f"127.0.0.1:{self.site_port}",
            "DJANGO_STATIC_ROOT": str(self.folder / "static"),
            "DJANGO_LOG_LEVEL": "WARNING",
        }
        environment.pop("PROMETHEUS_MULTIPROC_DIR", None)  # make serve makes its own
        return environment

    def readiness(self) -> None:
        """/readyz every PROBE_EVERY_SECONDS, straight to make serve (a load balancer's view), until the stop."""
        with httpx2.Client(timeout=10) as prober:
            while not self._stopping.wait(PROBE_EVERY_SECONDS):
                sent = time.time()
                try:
                    answer = prober.get(f"{self.site}/readyz")
                    body = answer.json()
                    seen = f"{answer.status_code} " + ",".join(
                        f"{check}={state}" for check, state in body["checks"].items() if state != "ok"
                    )
                except (httpx2.TransportError, ValueError, KeyError) as error:
                    seen = f"no answer ({type(error).__name__})"
                self.probes.append({"t": sent, "took": time.time() - sent, "seen": seen.strip()})

    def firing_or_pending(self) -> list[str]:
        """The paging alerts that fire or wait. Not the tickets: on a Prometheus as new as the drill's, the slow
        burns' windows (days) hold only the drill, so one fault's refusals keep them firing for the rest of it."""
        query = {"query": 'ALERTS{severity="page"}'}
        answer = httpx2.get(f"http://127.0.0.1:{self.prometheus_port}/api/v1/query", params=query, timeout=5).json()
        return sorted({each["metric"]["alertname"] for each in answer["data"]["result"]})

    def holding(self) -> int:
        """How many users hold a valid token now, from what users.mjs last said of each."""
        valid: dict[int, bool] = {}
        for record in list(self.users):
            if record["event"] in ("valid", "invalid"):
                valid[record["user"]] = record["event"] == "valid"
        return sum(valid.values())


def watching(stack: Stack) -> tuple[list[str], list[str]]:
    """Alertmanager's and Prometheus's commands, their configurations written into the stack's folder."""
    routing: dict[str, Any] = yaml.safe_load(ROUTING.read_text())
    for receiver in routing["receivers"]:
        for webhook in receiver["webhook_configs"]:
            webhook["url"] = f"{stack.pager.url}/{receiver['name']}"
    (stack.folder / "alertmanager.yml").write_text(yaml.safe_dump(routing))
    config: dict[str, Any] = yaml.safe_load(SCRAPE.read_text())
    config["global"] = {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL}
    config["rule_files"] = [str(SCRAPE.parent / name) for name in config["rule_files"]]
    config["scrape_configs"][0]["static_configs"] = [{"targets": [f"127.0.0.1:{stack.site_port}"]}]
    credentials = stack.folder / "metrics-token"
    credentials.write_text(stack.metrics_token)
    credentials.chmod(0o600)
    config["scrape_configs"][0]["authorization"] = {"type": "Bearer", "credentials_file": str(credentials)}
    alertmanagers = [{"targets": [f"127.0.0.1:{stack.alertmanager_port}"]}]
    config["alerting"]["alertmanagers"][0]["static_configs"] = alertmanagers
    (stack.folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    routes = [
        program("prometheus-alertmanager", "alertmanager", package="prometheus-alertmanager"),
        f"--config.file={stack.folder / 'alertmanager.yml'}",
        f"--storage.path={stack.folder / 'alertmanager'}",
        f"--web.listen-address=127.0.0.1:{stack.alertmanager_port}",
        "--cluster.listen-address=",
        "--log.level=warn",
    ]
    scrapes = [
        program("prometheus", package="prometheus"),
        f"--config.file={stack.folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={stack.folder / 'prometheus'}",
        f"--web.listen-address=127.0.0.1:{stack.prometheus_port}",
        "--log.level=warn",
    ]
    return routes, scrapes


def create_users(environment: dict[str, str], accounts: list[dict[str, str]]) -> None:
    made = "; ".join(
        f"User.objects.create_user({user['username']!r}, password={user['password']!r})" for user in accounts
    )
    subprocess.run(  # noqa: S603 - this interpreter, fixed script
        [sys.executable, "manage.py", "shell", "-c", f"from django.contrib.auth.models import User; {made}"],
        cwd=PROJECT_ROOT,
        env={**environment, "DATABASE_URL": stores.postgres_url(environment["DRILL_DATABASE"])},
        check=True,
        capture_output=True,
        timeout=START_SECONDS,
    )


def read_users(stack: Stack, users: subprocess.Popen[str]) -> None:
    assert users.stdout is not None
    for line in users.stdout:
        with contextlib.suppress(ValueError):
            stack.users.append(json.loads(line))


def run_phase(stack: Stack, faults: list[Fault], spread_seconds: float) -> list[dict[str, Any]]:
    """Everything up for `stack.mode`, the users' pages open, then each fault and its recovery; the records."""
    results: list[dict[str, Any]] = []
    stack.folder.mkdir(parents=True)
    log(f"{stack.mode} mode: starting in {stack.folder}")
    with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{stack.database}"')
    stack.redis.start()
    stack.database_link.start()
    stack.start_service()
    assert stack.service is not None
    environment = {**stack.environment(stack.service.api_key), "DRILL_DATABASE": stack.database}
    (stack.folder / "sports.conf").parent.mkdir(exist_ok=True)
    nginx_main = main_configuration(
        stack.folder, site_configuration(listen=stack.nginx_port, http_address=f"127.0.0.1:{stack.site_port}")
    )
    routes, scrapes = watching(stack)
    # make serve as an operator runs it; `-o`: the virtualenv `make drill` installed is not reinstalled under it.
    serve = ["make", "--no-print-directory", "-o", ".venv/.installed", "serve"]
    prober = threading.Thread(target=stack.readiness, daemon=True)
    try:
        with (
            serving(serve, stack.folder / "serve.log", cwd=PROJECT_ROOT, env=environment),
            serving([nginx_binary(), "-c", str(nginx_main)], stack.folder / "nginx.log"),
            serving(routes, stack.folder / "alertmanager.log"),
            serving(scrapes, stack.folder / "prometheus.log"),
        ):
            until(lambda: httpx2.get(f"{stack.site}/readyz", timeout=3).status_code == 200, "make serve was not ready")
            until(lambda: httpx2.get(f"{stack.front}/healthz", timeout=3).status_code == 200, "nginx did not answer")
            alertmanager = f"http://127.0.0.1:{stack.alertmanager_port}/-/ready"
            until(lambda: httpx2.get(alertmanager, timeout=3).status_code == 200, "Alertmanager did not start")
            prometheus = f"http://127.0.0.1:{stack.prometheus_port}/-/ready"
            until(lambda: httpx2.get(prometheus, timeout=3).status_code == 200, "Prometheus did not start")
            create_users(environment, stack.accounts)
            prober.start()
            settings = {
                "site": stack.front,
                "service": f"http://127.0.0.1:{stack.service_port}",
                "users": stack.accounts,
                "spreadMs": spread_seconds * 1000,
                "callEveryMs": CALL_EVERY_SECONDS * 1000,
            }
            with open_pages(stack, settings):
                until(lambda: stack.holding() == len(stack.accounts), "not every page got a token", spread_seconds + 60)
                log(f"{stack.mode} mode: {len(stack.accounts)} pages hold tokens")
                recover(stack)
                for fault in faults:
                    results.append(inflict(stack, fault))
    finally:
        stack._stopping.set()
        kept = [*stack.users, *({"event": "readyz", **probe} for probe in stack.probes)]
        lines = (json.dumps(record) for record in sorted(kept, key=lambda record: record["t"]))
        (stack.folder / "records.jsonl").write_text("".join(f"{line}\n" for line in lines))
        stack.database_link.restore()
        stack.database_link.stop()
        if stack.service is not None:
            with contextlib.suppress(ProcessLookupError):
                stack.signal_service(signal.SIGCONT)
            stack.service.stop()
        stack.redis.stop()
        stack.pager.close()
        with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{stack.database}" WITH (FORCE)')
    return results


@contextlib.contextmanager
def open_pages(stack: Stack, settings: dict[str, Any]) -> Iterator[None]:
    """users.mjs in Node for the block: the users' pages, their records read into `stack.users`."""
    with (stack.folder / "users.log").open("ab") as errors:
        users = subprocess.Popen(  # noqa: S603 - node, a script of ours
            [program("node", package="nodejs"), str(Path(__file__).with_name("users.mjs"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    assert users.stdin is not None
    users.stdin.write(json.dumps(settings))
    users.stdin.close()
    reader = threading.Thread(target=read_users, args=(stack, users), daemon=True)
    reader.start()
    try:
        yield
    finally:
        users.terminate()
        try:
            users.wait(timeout=10)
        except subprocess.TimeoutExpired:
            users.kill()
            users.wait(timeout=10)
        reader.join(timeout=10)


def recover(stack: Stack) -> None:
    """Until every page holds a token and no paging alert fires or waits, then Alertmanager's resolutions sent."""
    until(lambda: stack.holding() == len(stack.accounts), "the pages did not all hold a token again", RECOVERY_SECONDS)
    try:
        until(lambda: not stack.firing_or_pending(), "alerts still fire or wait", RECOVERY_SECONDS)
    except RuntimeError:
        raise RuntimeError(f"alerts still fire or wait: {', '.join(stack.firing_or_pending())}") from None
    time.sleep(RESOLUTIONS_SECONDS)


def inflict(stack: Stack, fault: Fault) -> dict[str, Any]:
    log(f"{fault.name}: begins")
    began = time.time()
    fault.begin(stack)
    time.sleep(max(0.0, began + fault.seconds - time.time()))
    fault.end(stack)
    ended = time.time()
    log(f"{fault.name}: over after {ended - began:.0f} s; recovering")
    try:
        recover(stack)
        problem = None
    except RuntimeError as error:  # said in the results; the next fault still runs
        problem = str(error)
    recovered = time.time()
    return {**measured(stack, fault, began, ended, recovered), "recovery_problem": problem}


def measured(stack: Stack, fault: Fault, began: float, ended: float, recovered: float) -> dict[str, Any]:
    during = [record for record in stack.users if began <= record["t"] < recovered]
    lost: dict[int, float] = {}
    for record in during:
        if record["event"] == "invalid":
            lost.setdefault(record["user"], record["t"] - began)
    refused = [record for record in during if record["event"] == "answer"]
    pages = [
        (arrived, sorted({alert["labels"]["alertname"] for alert in body["alerts"] if alert["status"] == "firing"}))
        for arrived, body in stack.pager.pages(began, recovered)
    ]
    probes = [probe for probe in stack.probes if began <= probe["t"] < ended]
    after = (probe["t"] - ended for probe in stack.probes if probe["t"] >= ended and probe["seen"] == "200")
    ready_again = next(after, None)
    seen: dict[str, int] = {}
    for probe in probes:
        seen[probe["seen"]] = seen.get(probe["seen"], 0) + 1
    result = {
        "fault": fault.name,
        "mode": stack.mode,
        "seconds": round(ended - began, 1),
        "first_user_error": round(min(lost.values()), 1) if lost else None,
        "users_who_lost_their_token": {str(user): round(after, 1) for user, after in sorted(lost.items())},
        "first_refused_answer": round(min(r["t"] for r in refused) - began, 1) if refused else None,
        "refused_answers": len(refused),
        "refusals": sorted({f"{r['status']} {r['error']}" for r in refused}),
        "page": round(pages[0][0] - began, 1) if pages else None,
        "alerts": pages[0][1] if pages else [],
        "later_pages": [[round(at - began, 1), names] for at, names in pages[1:]],
        "readyz": seen,
        "readyz_slowest": round(max((probe["took"] for probe in probes), default=0), 2),
        "readyz_all_ok_after_end": None if ready_again is None else round(ready_again, 1),
        "recovered_after_end": round(recovered - ended, 1),
    }
    log(f"{fault.name}: {json.dumps(result)}")
    return result


def freeze(stack: Stack) -> None:
    stack.signal_service(signal.SIGSTOP)


def thaw(stack: Stack) -> None:
    stack.signal_service(signal.SIGCONT)


LOGIN_FAULTS = [
    Fault("service killed 3 min (login mode)", 180, Stack.kill_service, Stack.start_service),
    Fault("service frozen 2 min", 120, freeze, thaw),
    Fault("Redis frozen 1 min", 60, lambda stack: stack.redis.hang(), lambda stack: stack.redis.resume()),
    Fault("Redis stopped 1 min", 60, lambda stack: stack.redis.stop(), lambda stack: stack.redis.start()),
    Fault(
        "PostgreSQL cut (black hole) 65 s",
        65,
        lambda stack: stack.database_link.black_hole(),
        lambda stack: stack.database_link.cut(),  # the connections that lost bytes broken, as after a partition
    ),
]
SITE_FAULTS = [Fault("service killed 10.5 min (site mode)", 630, Stack.kill_service, Stack.start_service)]
LONG = {"service killed 3 min (login mode)", "service frozen 2 min", "service killed 10.5 min (site mode)"}


def restored_database(fault: Fault) -> Fault:
    """The PostgreSQL fault ends by listening again (cut() stopped the proxy's listener)."""

    def end(stack: Stack) -> None:
        fault.end(stack)
        stack.database_link.restore()

    return Fault(fault.name, fault.seconds, fault.begin, end) if "PostgreSQL" in fault.name else fault


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| fault | first user error | page sent | which alert | refused answers (first) | /readyz during the fault |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        error = "none" if result["first_user_error"] is None else f"+{result['first_user_error']:.0f} s"
        if result["first_user_error"] is not None:
            error += f" ({len(result['users_who_lost_their_token'])} of {USERS} users)"
        page = "none" if result["page"] is None else f"+{result['page']:.0f} s"
        refused = "none"
        if result["refused_answers"]:
            kinds = ", ".join(result["refusals"])
            refused = f"{result['refused_answers']} ({kinds}; first +{result['first_refused_answer']:.0f} s)"
        ready = "; ".join(f"{seen} x{count}" for seen, count in result["readyz"].items())
        alerts = ", ".join(result["alerts"]) or "—"
        lines.append(f"| {result['fault']} | {error} | {page} | {alerts} | {refused} | {ready} |")
    return "\n".join(lines)


def verdict(results: list[dict[str, Any]]) -> list[str]:
    """The two conditions the drill is run for, each with what the records say."""
    said = []
    for result in results:
        if result["fault"] not in LONG:
            continue
        error, page = result["first_user_error"], result["page"]
        paged_first = page is not None and (error is None or page < error)
        said.append(f"{'yes' if paged_first else 'NO '} the page came before any user error: {result['fault']}")
        if result["fault"] != "service killed 10.5 min (site mode)":  # the outages shorter than 4 minutes
            kept = not result["users_who_lost_their_token"]
            said.append(f"{'yes' if kept else 'NO '} no user lost their token: {result['fault']}")
    return said


def main(arguments: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.drill.outage", description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, help="where the logs and drill.json go (default: a new temporary one)")
    parser.add_argument("--long-only", action="store_true", help="only the faults of 2 minutes or more (about 35 min)")
    parser.add_argument("--spread", type=float, default=300, help="seconds over which the pages open (default 300)")
    options = parser.parse_args(arguments)
    folder = options.folder or Path(tempfile.mkdtemp(prefix="sports-drill-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    accounts = [{"username": f"user{number}", "password": secrets.token_urlsafe(12)} for number in range(USERS)]
    results: list[dict[str, Any]] = []
    phases = [("login", LOGIN_FAULTS, options.spread), ("site", SITE_FAULTS, 30.0)]
    try:
        for mode, faults, spread in phases:
            chosen = [restored_database(fault) for fault in faults if not options.long_only or fault.name in LONG]
            if chosen:
                stack = Stack(mode, folder / mode, accounts, folder / "service")
                results += run_phase(stack, chosen, spread)
    finally:
        (folder / "drill.json").write_text(json.dumps(results, indent=2))
        print(table(results))
        print("\n".join(["", *verdict(results)]))
        print(f"\nEvery record: {folder / 'drill.json'}; wall time {(time.monotonic() - started) / 60:.1f} min")


if __name__ == "__main__":
    main(sys.argv[1:])
