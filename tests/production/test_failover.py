"""The failover drill: lose one store's machine at a time, then a whole machine, under load, and the site
follows the stores by itself within the bounds docs/deploy.md ("Several machines") gives.

Built on loopback as three machines would hold it: a Redis primary, its replica and three Sentinels
(quorum 2); a PostgreSQL primary with a streaming standby (tests/postgres_server.py); two nodes started
as `make serve` starts them (tests/production/cluster.py), in site mode against a stand-in service that
counts its mints (tests/counting_service.py), with the sandbox mounted for its socket's match events,
behind docs/deploy.md's nginx with both nodes in its upstream; and logged-in users minting through
nginx, a user logging in again and again, and a probe of each node's `/readyz`. The site is given the
stores only as an operator would: REDIS_SENTINELS with REDIS_URL's service form, and a DATABASE_URL
naming both PostgreSQL hosts with target_session_attrs=primary.

The scenarios run in this order on one such deployment, each leaving it whole again for the next: a
Redis failover (and the old primary's return), a PostgreSQL failover (the test promotes the standby, as
the failover engine would, and gives the promoted server a new standby), then a whole machine lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
import redis
from websockets.asyncio.client import connect

from tests.counting_service import CountingService
from tests.postgres_server import PostgresServer, postgres_bin
from tests.production.cluster import PASSWORD, USERNAME, Cluster, free_port, logged_in, require_engines
from tests.production.nginx import main_configuration, nginx_binary, site_configuration
from tests.redis_server import RedisServer, SentinelServer, require_redis_server
from tests.support import envelope
from tests.upstreams import http_response

# Serial: it asserts the failover bounds in wall-clock seconds on real processes, which a busy second core
# would stretch (Sentinel's own timers among them).
pytestmark = pytest.mark.serial

DOWN_AFTER_MS = 1000  # Sentinel's down-after-milliseconds: how long a primary is silent before it is down
REDIS_BOUND = DOWN_AFTER_MS / 1000 + 3  # the most seconds of 503 a Redis failover may cost
PROMOTION_BOUND = 3  # the most seconds of 503 after the standby's promotion
PROMOTE_AFTER = 2.0  # seconds the failover engine takes to promote the standby (the test stands in for it)
READYZ_INTERVAL = 1.0  # /readyz runs its store checks at most once a second per process (mintroute.readiness)
USERS = 3  # logged-in users minting, one request after another each
DATABASE = "sports"
SERVICE = SentinelServer.SERVICE
FROZEN_SECONDS = 0.3  # a lost machine's site node stops answering before its connections end
SITE_PROCESSES = 2  # processes that serve the route: two nodes of one gunicorn worker each
FLIGHT_CALLERS = 8  # callers waiting on one mint of the site's token when the cache fails
FLIGHT_MINT_SECONDS = 1.5  # how long the service takes over that mint


@dataclass(frozen=True)
class Answer:
    kind: str  # "mint", "login", "readyz 0", "readyz 1"
    sent: float
    done: float
    status: int | str  # the HTTP status, or the transport error's name and text
    json: bool  # whether the answer is JSON
    error: str = ""  # a JSON refusal's `error`


class Service(CountingService):
    """The stand-in service, counting the route's mints only: anything but a `tokens.create` (such as
    /readyz's GET of the service's origin) is answered 404 and not counted."""

    def _answer(self, body: bytes) -> bytes:
        try:
            method = json.loads(body).get("method")
        except ValueError:
            method = None
        if method != "tokens.create":
            return http_response(b"{}", status="404 Not Found")
        return super()._answer(body)


class Load:
    """Users of the site behind nginx and probes of each node, each asking one request after another until
    stopped; every answer kept with its times."""

    def __init__(self, url: str, nodes: list[str], browsers: list[httpx2.Client]) -> None:
        self.url = url
        self.answers: list[Answer] = []
        self._stop = threading.Event()
        workers: list[Callable[[], None]] = [lambda browser=browser: self._mint(browser) for browser in browsers]
        workers.append(self._log_in)
        workers += [lambda index=index, node=node: self._probe(index, node) for index, node in enumerate(nodes)]
        self._threads = [threading.Thread(target=work, daemon=True) for work in workers]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _ask(self, kind: str, call: Callable[[], httpx2.Response]) -> httpx2.Response | None:
        sent = time.monotonic()
        try:
            answer = call()
        except httpx2.HTTPError as error:
            self.answers.append(Answer(kind, sent, time.monotonic(), f"{type(error).__name__}: {error}", False))
            return None
        is_json = answer.headers.get("content-type", "").startswith("application/json")
        error = str(answer.json().get("error", "")) if is_json and answer.status_code >= 400 else ""
        self.answers.append(Answer(kind, sent, time.monotonic(), answer.status_code, is_json, error))
        return answer

    def _mint(self, browser: httpx2.Client) -> None:
        csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
        while not self._stop.is_set():
            self._ask("mint", lambda: browser.post("/api/sports-token", json={}, headers=csrf))
            time.sleep(0.05)

    def _log_in(self) -> None:
        """A new browser each time: the login page, then the form posted (302 when it logged in)."""
        while not self._stop.is_set():
            with httpx2.Client(base_url=self.url, timeout=15) as browser:
                page = self._ask("login page", lambda browser=browser: browser.get("/accounts/login/"))
                form = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text) if page else None
                if form is not None:
                    fields = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": form.group(1)}
                    self._ask("login", lambda b=browser, f=fields: b.post("/accounts/login/", data=f))
            time.sleep(0.1)

    def _probe(self, index: int, node: str) -> None:
        with httpx2.Client(base_url=node, timeout=15) as probe:
            while not self._stop.is_set():
                self._ask(f"readyz {index}", lambda: probe.get("/readyz"))
                time.sleep(0.2)

    def of(self, kind: str, since: float) -> list[Answer]:
        return [answer for answer in list(self.answers) if answer.kind == kind and answer.done >= since]

    def recovered(self, since: float, *, kinds: tuple[str, ...] = ("mint",), calm: int = 5) -> bool:
        """Whether each of `kinds` has answered since `since`, its last `calm` answers all 200 (or a login's 302)."""
        for kind in kinds:
            answers = self.of(kind, since)
            if len(answers) < calm or any(answer.status not in (200, 302) for answer in answers[-calm:]):
                return False
        return True


def until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.05)


def outage(answers: list[Answer], fault_at: float, good: tuple[int, ...] = (200,)) -> float:
    """Seconds from `fault_at` to the end of the last answer that was not `good` (0 for none)."""
    bad = [answer.done for answer in answers if answer.status not in good]
    return max(bad) - fault_at if bad else 0.0


def descendants(pid: int) -> list[int]:
    """`pid`'s processes, each stopped (SIGSTOP) before its children are listed: none starts another meanwhile."""
    found: list[int] = []
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            for child in task.read_text().split():
                found += [int(child), *descendants(int(child))]
    return found


def processes_of(pid: int) -> set[int]:
    """The pids of `pid` and every process under it (not stopped): a restart anywhere changes the set."""
    found = {pid}
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            for child in task.read_text().split():
                found |= processes_of(int(child))
    return found


def freeze(launcher: subprocess.Popen[bytes]) -> list[int]:
    """SIGSTOP to a node and every process under it: it answers nothing from now on; their pids."""
    return [launcher.pid, *descendants(launcher.pid)]


def kill(frozen: list[int]) -> None:
    """SIGKILL to frozen processes at once, as a lost machine ends them."""
    for pid in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def kill_redis(server: RedisServer) -> None:
    """SIGKILL to a redis-server (a primary or a Sentinel): it ends, closing nothing in order."""
    assert server.process is not None
    server.process.kill()
    server.process.wait(timeout=10)
    server.process = None


class Stores:
    """The Redis service (a primary, a replica, three Sentinels) and PostgreSQL (a primary, a standby)."""

    def __init__(self, folder: Path) -> None:
        self.redis_primary = RedisServer()
        self.redis_replica = RedisServer(self.redis_primary)
        self.sentinels = [
            SentinelServer(self.redis_primary, folder, down_after_ms=DOWN_AFTER_MS, quorum=2) for _ in range(3)
        ]
        self.pg_primary = PostgresServer()
        self.pg_standby = PostgresServer(self.pg_primary)
        self.pg_ports = (self.pg_primary.port, self.pg_standby.port)
        self._redis: list[RedisServer] = [self.redis_primary, self.redis_replica, *self.sentinels]

    @property
    def database_url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.pg_ports)
        return f"postgres://postgres@{hosts}/{DATABASE}?target_session_attrs=primary&connect_timeout=2"

    @property
    def sentinel_list(self) -> str:
        return ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)

    def start(self) -> None:
        for server in self._redis:
            server.start()
        self.pg_primary.start()
        self.pg_primary.execute(f'CREATE DATABASE "{DATABASE}"')
        self.pg_standby.start()

    def sentinels_agree(self) -> bool:
        """Every Sentinel that runs knows the others that run and a replica in sync (a failover needs them)."""
        running = [sentinel for sentinel in self.sentinels if sentinel.process is not None]
        for sentinel in running:
            master = sentinel.client().sentinel_masters()[SERVICE]
            if master["num-other-sentinels"] < len(running) - 1 or master["num-slaves"] < 1:
                return False
            replicas = sentinel.client().sentinel_slaves(SERVICE)
            if not any(
                replica["master-link-status"] == "ok" and replica["is_disconnected"] is False for replica in replicas
            ):
                return False
        return True

    def redis_roles(self) -> tuple[RedisServer, RedisServer]:
        """The Redis primary and replica as Sentinel names them now."""
        port = self.sentinels[0].primary_port()
        primary = next(server for server in (self.redis_primary, self.redis_replica) if server.port == port)
        return primary, self.redis_replica if primary is self.redis_primary else self.redis_primary

    def pg_roles(self) -> tuple[PostgresServer, PostgresServer]:
        return (self.pg_primary, self.pg_standby) if self.pg_standby.primary else (self.pg_standby, self.pg_primary)

    def new_standby(self) -> None:
        """The lost PostgreSQL server replaced: a new standby of the primary, on the lost one's port (the
        site's DATABASE_URL names it), as a failover engine rebuilds a lost member."""
        primary, lost = self.pg_roles()
        lost.stop()
        self.pg_primary, self.pg_standby = primary, PostgresServer(primary, port=lost.port)  # stopped with the rest
        self.pg_standby.start()
        self.pg_standby.wait_replaying()

    def stop(self) -> None:
        for server in (self.pg_standby, self.pg_primary):
            server.stop()
        for each in reversed(self._redis):
            each.stop()


class Site(Cluster):
    """Two nodes of the site on the drill's stores, started together."""

    def __init__(self, stores_: Stores, service: CountingService, folder: Path) -> None:
        super().__init__(
            DJANGO_SETTINGS_MODULE="tests.production.failover_settings",
            DATABASE_URL=stores_.database_url,
            REDIS_URL=f"redis://{SERVICE}/0",
            REDIS_SENTINELS=stores_.sentinel_list,
            SPORTS_BASE_URL=service.url,  # the route mints there; the sandbox stays mounted for its socket
            SPORTS_API_KEY="sk_test_" + secrets.token_urlsafe(32),  # the stand-in takes any key
            SPORTS_TOKEN_SHARING="site",
            SPORTS_TOKEN_RATE="100000/h",
            SPORTS_TRUSTED_PROXY_COUNT="1",
            DJANGO_STATIC_ROOT=str(folder / "static"),
        )
        self.events_key = ""

    def start(self, *, events_in: tuple[bool, ...] = (True, False)) -> None:
        self.prepare()
        addresses = [(events, free_port(), free_port()) for events in events_in]
        with ThreadPoolExecutor(len(addresses)) as starting:
            launching = [starting.submit(self._launch, *address) for address in addresses]
            self.processes += [launched.result() for launched in launching]
        for events, port, ws_port in addresses:
            self.events.append(events)
            self.urls.append(f"http://127.0.0.1:{port}")
            self.ws_urls.append(f"ws://127.0.0.1:{ws_port}/sdk/v1/ws")

    def prepare(self) -> None:
        """What `make serve` does before it serves, in one process: `migrate` on the primary (the standby
        streams it), the static files collected; then the user USERNAME, and the sandbox's keys of the nodes
        and of the event watch."""
        script = (
            "from io import StringIO\n"
            "from django.contrib.auth.models import User\n"
            "from django.core.management import call_command\n"
            "call_command('migrate', '--no-input', verbosity=0)\n"
            "call_command('collectstatic', '--no-input', verbosity=0)\n"
            f"User.objects.create_user({USERNAME!r}, password={PASSWORD!r})\n"
            "for account in ('failover-site', 'failover-events'):\n"
            "    said = StringIO()\n"
            "    call_command('sandbox_key', 'create', '--account', account, '--tier', 'growth', stdout=said)\n"
            "    print(said.getvalue().splitlines()[-1])\n"
        )
        self.site_key, self.events_key = self.manage("shell", "-c", script).split()[-2:]

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=25)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@contextlib.contextmanager
def nginx_for(site: Site, folder: Path) -> Iterator[str]:
    """docs/deploy.md's nginx with both nodes in its upstream (its "A rolling restart"); its URL."""
    first, second = (url.removeprefix("http://") for url in site.urls)
    port = free_port()
    configuration = site_configuration(listen=port, http_address=first)
    configuration = configuration.replace(f"server {first};", f"server {first};\n    server {second};")
    nginx = subprocess.Popen([nginx_binary(), "-c", str(main_configuration(folder, configuration))])  # noqa: S603
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: _answers(f"{url}/healthz"), 15, "nginx did not answer")
        yield url
    finally:
        nginx.terminate()
        nginx.wait(timeout=15)


def _answers(url: str) -> bool:
    try:
        return httpx2.get(url, timeout=5).status_code == 200
    except httpx2.TransportError:
        return False


@dataclass
class Drill:
    stores: Stores
    site: Site
    service: CountingService
    url: str
    load: Load
    returned_at: float = 0.0  # when the first Redis primary came back after its failover

    def processes(self) -> list[set[int]]:
        return [processes_of(process.pid) for process in self.site.processes if process.poll() is None]


@pytest.fixture(scope="module")
def drill(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Drill]:
    require_engines()
    require_redis_server()
    postgres_bin()
    folder = tmp_path_factory.mktemp("failover")
    stores_ = Stores(folder)
    service = Service()
    site = Site(stores_, service, folder)
    try:
        stores_.start()
        site.start()
        until(stores_.sentinels_agree, 20, "the Sentinels did not find each other and the replica")
        stores_.pg_standby.wait_replaying()
        with nginx_for(site, folder) as url:
            browsers = [logged_in(url) for _ in range(USERS)]
            try:
                with Load(url, site.urls, browsers) as load:
                    until(
                        lambda: load.recovered(0, kinds=("mint", "login", "readyz 0", "readyz 1")),
                        20,
                        "the site did not answer 200 through nginx",
                    )
                    yield Drill(stores_, site, service, url, load)
            finally:
                for browser in browsers:
                    browser.close()
    finally:
        site.stop()
        service.close()
        stores_.stop()


def assert_route_rows(answers: list[Answer]) -> None:
    """Every answer of the route is its 200 or its 503 JSON: never a 500, a 502 or an HTML page."""
    rows = {(answer.status, answer.json) for answer in answers}
    assert rows <= {(200, True), (503, True)}, sorted(rows, key=str)


def assert_logins(load: Load, since: float) -> list[Answer]:
    """The login page is 200 or 503, and a login logs in (302) or is 503: never a 500, nor Django's 400 for a
    session it could not save. The logins since `since`."""
    pages, logins = load.of("login page", since), load.of("login", since)
    assert {answer.status for answer in pages} <= {200, 503}, sorted({str(answer.status) for answer in pages})
    assert {answer.status for answer in logins} <= {302, 503}, sorted({str(answer.status) for answer in logins})
    return logins


def test_a_redis_failover_costs_at_most_down_after_plus_3_s_and_no_restart(drill: Drill) -> None:
    load, stores_ = drill.load, drill.stores
    before, mints_before = drill.processes(), drill.service.mints
    primary, replica = stores_.redis_roles()
    replica.wait_in_sync()
    events = EventWatch(drill.site)
    with events, Flight(drill) as flight:
        until(lambda: len(events.received) >= 2, 15, "no match event reached the socket")
        flight.begin()  # the site's token replaced, slowly: the cache fails while the callers wait on it
        kill_redis(primary)
        killed_at = time.monotonic()
        until(
            lambda: load.recovered(killed_at, kinds=("mint", "readyz 0", "readyz 1")),
            REDIS_BOUND + 15,
            "the route and /readyz did not answer 200 again",
        )
        until(lambda: events.since(killed_at + REDIS_BOUND), 5, "the socket received no event after the failover")
    assert stores_.sentinels[0].primary_port() == replica.port
    mints = load.of("mint", killed_at)
    assert_route_rows(mints)
    assert_logins(load, killed_at)  # the login throttle counts in Redis: 503 meanwhile
    route = outage(mints, killed_at)
    assert 0 < route <= REDIS_BOUND, f"the route answered 503 for {route:.1f} s"
    for node in (0, 1):
        probes = load.of(f"readyz {node}", killed_at)
        assert any(probe.status == 503 for probe in probes), "/readyz never said the cache was gone"
        readyz = outage(probes, killed_at)
        assert readyz <= REDIS_BOUND + READYZ_INTERVAL, f"/readyz of node {node} answered 503 for {readyz:.1f} s"
    assert events.closed is None, f"the socket was closed: {events.closed}"
    delivered_again = events.resumed_after(killed_at) - killed_at
    assert delivered_again <= REDIS_BOUND, f"the channel layer delivered again {delivered_again:.1f} s after"
    assert drill.processes() == before  # no process restarted
    assert_route_rows(flight.answers)
    # The replacement was due; the callers that waited on it when the cache failed share one mint per process.
    assert 1 <= flight.mints <= 1 + SITE_PROCESSES, f"{flight.mints} upstream mints for {FLIGHT_CALLERS} callers"
    readyz_seconds = outage(load.of("readyz 0", killed_at), killed_at)
    print(  # the drill's figures: docs/deploy.md gives them
        f"\nRedis failover: route 503 for {route:.1f} s, /readyz {readyz_seconds:.1f} s, events again after"
        f" {delivered_again:.1f} s; {flight.mints} upstream mints for {FLIGHT_CALLERS} callers under a flight"
    )

    # The old primary returns, empty and still a primary, until Sentinel makes it a replica of the new one
    # (up to 20 s later: the next scenario runs meanwhile, and the whole machine's waits for it).
    primary.start()
    drill.returned_at = time.monotonic()
    time.sleep(1)
    assert [answer.status for answer in load.of("mint", drill.returned_at) if answer.status != 200] == []
    assert drill.service.mints - mints_before == flight.mints  # none while the route served the site's token
    assert drill.processes() == before


def test_a_postgresql_failover_costs_at_most_3_s_after_the_promotion_and_no_restart(drill: Drill) -> None:
    load, stores_ = drill.load, drill.stores
    before, mints_before = drill.processes(), drill.service.mints
    primary, standby = stores_.pg_roles()
    primary.kill()
    killed_at = time.monotonic()
    time.sleep(PROMOTE_AFTER)
    promoted_at = time.monotonic()
    standby.promote()
    until(
        lambda: load.recovered(promoted_at, kinds=("mint", "login", "readyz 0", "readyz 1"), calm=3),
        PROMOTION_BOUND + 15,
        "the route, the logins and /readyz did not answer 200 again",
    )
    time.sleep(0.5)
    mints = load.of("mint", killed_at)
    assert_route_rows(mints)
    logins = assert_logins(load, killed_at)
    assert any(answer.status == 503 for answer in mints), "the route never saw the database gone"
    # Redis meanwhile: its former primary has returned and Sentinel makes it a replica; that costs nothing.
    assert {answer.error for answer in mints if answer.status == 503} == {"authentication_unavailable"}
    route, login = outage(mints, promoted_at), outage(logins, promoted_at, good=(302,))
    assert route <= PROMOTION_BOUND, f"the route answered 503 for {route:.1f} s after the promotion"
    assert login <= PROMOTION_BOUND, f"logins answered 503 for {login:.1f} s after the promotion"
    for node in (0, 1):
        probes = load.of(f"readyz {node}", killed_at)
        assert any(probe.status == 503 for probe in probes), "/readyz never said the database was gone"
        readyz = outage(probes, promoted_at)
        assert readyz <= PROMOTION_BOUND + READYZ_INTERVAL, f"/readyz of node {node}: 503 until {readyz:+.1f} s"
    assert drill.service.mints - mints_before <= SITE_PROCESSES
    assert drill.processes() == before
    print(  # the drill's figures: docs/deploy.md gives them
        f"\nPostgreSQL failover (promoted {promoted_at - killed_at:.1f} s after the kill): route 503 until"
        f" {route:+.1f} s, logins until {login:+.1f} s after the promotion,"
        f" {drill.service.mints - mints_before} upstream mints"
    )
    stores_.new_standby()  # the lost server replaced, for the next scenario


def test_a_whole_machine_lost_costs_the_same_and_no_502(drill: Drill) -> None:
    """The Redis primary, a Sentinel, the PostgreSQL primary and a site node lost at once."""
    load, stores_ = drill.load, drill.stores
    mints_before = drill.service.mints
    redis_primary, redis_replica = stores_.redis_roles()
    pg_primary, pg_standby = stores_.pg_roles()
    until(
        lambda: redis.Redis(port=redis_replica.port).info("replication")["role"] == "slave",
        20,
        "Sentinel did not make the returned primary a replica",
    )
    redis_replica.wait_in_sync()
    until(stores_.sentinels_agree, 20, "the Sentinels did not see the returned primary as a replica")
    returned = [answer for answer in load.of("mint", drill.returned_at) if answer.error == "rate_limit_unavailable"]
    assert returned == [], "the former Redis primary's return cost answers"
    survivor = processes_of(drill.site.processes[0].pid)

    node = freeze(drill.site.processes[1])
    kill_redis(redis_primary)
    kill_redis(stores_.sentinels[2])
    pg_primary.kill()
    killed_at = time.monotonic()
    time.sleep(FROZEN_SECONDS)  # what nginx sent the node meanwhile is in flight when it dies
    kill(node)
    drill.site.processes[1].wait(timeout=10)
    time.sleep(PROMOTE_AFTER)
    promoted_at = time.monotonic()
    pg_standby.promote()
    until(
        lambda: load.recovered(max(promoted_at, killed_at + REDIS_BOUND), kinds=("mint", "login"), calm=3),
        REDIS_BOUND + PROMOTION_BOUND + 15,
        "the route and the logins did not answer 200 again",
    )
    time.sleep(0.5)
    mints = load.of("mint", killed_at)
    assert [answer.status for answer in mints + load.of("login page", killed_at) if answer.status == 502] == []
    assert_route_rows(mints)
    logins = assert_logins(load, killed_at)
    bound = max(killed_at + REDIS_BOUND, promoted_at + PROMOTION_BOUND) - killed_at
    route, login = outage(mints, killed_at), outage(logins, killed_at, good=(302,))
    assert 0 < route <= bound, f"the route answered 503 for {route:.1f} s (bound {bound:.1f} s)"
    assert login <= bound, f"logins answered 503 for {login:.1f} s (bound {bound:.1f} s)"
    assert drill.service.mints - mints_before <= SITE_PROCESSES
    assert processes_of(drill.site.processes[0].pid) == survivor
    print(  # the drill's figures: docs/deploy.md gives them
        f"\nA whole machine (promoted {promoted_at - killed_at:.1f} s after): route 503 for {route:.1f} s, logins"
        f" {login:.1f} s, {drill.service.mints - mints_before} upstream mints"
    )


class Flight:
    """Callers in both processes asking at once for a new site token (`reason: "unauthorized"`) from a slow
    service: one caller mints while the others wait on the shared cache, until `begin` returns with the
    mint under way."""

    def __init__(self, drill: Drill) -> None:
        self.drill = drill
        self.browsers = [logged_in(drill.url) for _ in range(FLIGHT_CALLERS)]
        self.answers: list[Answer] = []
        self.mints = 0
        self._mints_before = drill.service.mints
        self._threads = [threading.Thread(target=self._ask, args=(browser,)) for browser in self.browsers]

    def __enter__(self) -> Flight:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for thread in self._threads:
            if thread.ident is not None:  # started
                thread.join(timeout=30)
        for browser in self.browsers:
            browser.close()
        self.drill.service.delay = 0
        self.mints = self.drill.service.mints - self._mints_before

    def begin(self) -> None:
        service = self.drill.service
        service.delay = FLIGHT_MINT_SECONDS
        self._mints_before, requests_before = service.mints, service.requests
        for thread in self._threads:
            thread.start()
        until(lambda: service.requests > requests_before, 10, "no mint began")
        time.sleep(0.2)  # the other callers are waiting on it by now

    def _ask(self, browser: httpx2.Client) -> None:
        sent = time.monotonic()
        csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
        answer = browser.post("/api/sports-token", json={"reason": "unauthorized"}, headers=csrf)
        is_json = answer.headers.get("content-type", "").startswith("application/json")
        self.answers.append(Answer("flight", sent, time.monotonic(), answer.status_code, is_json))


class EventWatch:
    """A socket of the sandbox on the second node, subscribed to the match events the first node publishes
    (while a socket of its own is open): they reach it only through the channel layer (Redis). Keeps when
    each event arrived."""

    def __init__(self, site: Site) -> None:
        self.publisher, self.url = site.ws_urls
        self.key = site.events_key
        self.received: list[float] = []
        self.closed: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)

    def __enter__(self) -> EventWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    async def _watch(self) -> None:
        try:
            auth = json.dumps(envelope("auth", {"apiKey": self.key}))
            async with connect(self.publisher) as keeps_simulation_running, connect(self.url) as socket:
                await keeps_simulation_running.send(auth)  # the first node publishes while it holds a socket
                await keeps_simulation_running.recv()
                await socket.send(auth)
                await socket.recv()
                await socket.send(json.dumps(envelope("matches.subscribe", {})))
                await socket.recv()
                while not self._stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        frame = json.loads(await asyncio.wait_for(socket.recv(), 0.2))
                        if frame.get("method") == "matches.event":
                            self.received.append(time.monotonic())
        except Exception as error:  # kept for the assertion, which says what closed it
            self.closed = f"{type(error).__name__}: {error}"

    def since(self, moment: float) -> bool:
        return any(each > moment for each in self.received)

    def resumed_after(self, fault_at: float) -> float:
        """When events arrived again after the longest silence that followed `fault_at`."""
        times = [fault_at, *(each for each in self.received if each > fault_at)]
        gaps = [(later - earlier, later) for earlier, later in itertools.pairwise(times)]
        return max(gaps)[1]
