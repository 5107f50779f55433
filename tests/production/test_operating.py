"""Operating `make serve` (config.serve in production, 2 gunicorn workers, SPORTS_METRICS on): /metrics
adds up both workers' counts and keeps a dead worker's; a real Prometheus (Debian's) loads the
shipped scrape configuration and rules and answers a query of the route's counter; through an outage of
the service, Prometheus and Alertmanager with the shipped rules and routing page a webhook while every
user is still answered; /readyz answers within 2 s, 503 with the failing check, while its PostgreSQL
(behind a TCP proxy) is cut or silent or its own Redis is frozen or stopped; with the stand-in service (a
standalone sandbox, behind a TCP proxy too) killed it stays 200, the service `unavailable` in its body and
`sports_service_up` 0 at /metrics.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import psycopg
import pytest
import redis
import yaml
from django.http import HttpRequest, HttpResponse
from django.test import override_settings

from mintroute import reuse
from mintroute.readiness import STORE_INTERVAL
from mintroute.reuse import TOKEN_COOKIE, TOKEN_COOKIE_SALT
from sportsproxy.testing import SportsSandbox, start_sandbox
from tests import stores
from tests.pager import Pager
from tests.production.cluster import PROJECT_ROOT, Cluster, free_port, logged_in, mint, require_engines
from tests.production.tcp_proxy import TcpProxy, postgres_proxy
from tests.production.test_make_serve import PRODUCTION
from tests.redis_server import RedisServer

WITHIN_SECONDS = 2  # the rule's bound for /readyz, whatever hangs beneath it
SCRAPE = PROJECT_ROOT / "deploy" / "prometheus" / "prometheus.yml"
ROUTING = PROJECT_ROOT / "deploy" / "prometheus" / "alertmanager.yml"
PAGE_WITHIN_SECONDS = 120  # the rules' bound: a page within 2 minutes of an outage
COUNTER = re.compile(r'^sports_token_requests_total\{outcome="(\w+)"\} (\S+)$', re.MULTILINE)


@dataclass
class Operated:
    node: Cluster
    url: str
    database: TcpProxy
    redis: RedisServer
    service: SportsSandbox
    service_link: TcpProxy  # the network between the site and the service
    metrics_dir: Path


def _start(node: Cluster) -> None:
    """Cluster.start without touching the shared Redis (this node has its own)."""
    node.prepare()
    node._start_server(events=False)


def _stop(node: Cluster) -> None:
    for process in node.processes:
        process.terminate()
        try:
            process.wait(timeout=25)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{node.database}" WITH (FORCE)')


@pytest.fixture(scope="module")
def operated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operated]:
    require_engines()
    redis_server, database, service = RedisServer(), postgres_proxy(), start_sandbox()
    service_link = TcpProxy(urlsplit(service.base_url).port or 80)
    redis_server.start()
    database.start()
    service_link.start()
    node = Cluster(
        **PRODUCTION,
        REDIS_URL=redis_server.url,
        SPORTS_SANDBOX="0",
        SPORTS_BASE_URL=f"http://127.0.0.1:{service_link.port}",
        SPORTS_API_KEY=service.api_key,
        SPORTS_TOKEN_RATE="1000/m",
        SPORTS_METRICS="1",
        SPORTS_TOKEN_SHARING="login",  # whatever the project's answer: the outage test ages each login's token
    )
    node.environment.pop("PROMETHEUS_MULTIPROC_DIR", None)  # make serve makes its own
    node.environment["DATABASE_URL"] = stores.postgres_url(node.database, port=database.port)
    node.site_key = service.api_key
    node.workers = 2
    made: list[Path] = []
    try:
        _start(node)
        made.append(multiprocess_dir(node))
        yield Operated(node, node.urls[0], database, redis_server, service, service_link, made[0])
    finally:
        database.restore()
        _stop(node)
        database.stop()
        redis_server.stop()
        service_link.stop()
        service.stop()
    assert not any(folder.exists() for folder in made)  # the folder make serve made went with it


def multiprocess_dir(node: Cluster) -> Path:
    """The folder make serve made for its workers' counts (from the gunicorn master's environment)."""
    master = gunicorn_master(node)
    variables = Path(f"/proc/{master}/environ").read_bytes().split(b"\0")
    named = [line.partition(b"=")[2].decode() for line in variables if line.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    assert len(named) == 1
    folder = Path(named[0])
    assert folder.is_dir()
    assert folder.stat().st_mode & 0o077 == 0  # private to the site's user
    return folder


def counts(url: str) -> dict[str, float]:
    """sports_token_requests_total by outcome, as /metrics says it now (from loopback)."""
    answer = httpx2.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200, answer.text
    return {outcome: float(value) for outcome, value in COUNTER.findall(answer.text)}


def anonymous_mint(url: str) -> None:
    """One answer of the route (401 not_authenticated) on a connection of its own, so that the
    kernel hands it to either worker."""
    with httpx2.Client(timeout=10) as fresh:
        assert fresh.post(f"{url}/api/sports-token", headers={"Connection": "close"}).status_code == 401


def counting_pids(metrics_dir: Path) -> set[int]:
    workers = (path.stem.rpartition("_")[2] for path in metrics_dir.glob("counter_*.db"))
    return {int(pid) for pid in workers if pid.isdigit()}  # not counter_archive.db: dead workers' counts


def _children(pid: int) -> set[int]:
    return {int(each) for task in Path(f"/proc/{pid}/task").glob("*/children") for each in task.read_text().split()}


def gunicorn_master(node: Cluster) -> int:
    """The gunicorn master config.serve started for the node."""
    launched = _children(node.processes[0].pid)
    masters = [pid for pid in launched if b"gunicorn" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(masters) == 1
    return masters[0]


def gunicorn_workers(node: Cluster) -> set[int]:
    """The pids of the node's gunicorn workers."""
    return _children(gunicorn_master(node))


def test_the_first_probe_is_ready(operated: Operated) -> None:
    answer = httpx2.get(f"{operated.url}/readyz", timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"ready": True, "checks": {"database": "ok", "cache": "ok", "service": "ok"}}
    assert answer.headers["Cache-Control"] == "no-store"
    assert "set-cookie" not in answer.headers


def test_metrics_add_up_both_workers(operated: Operated) -> None:
    before = counts(operated.url).get("not_authenticated", 0)
    workers = gunicorn_workers(operated.node)
    assert len(workers) == 2
    sent = 0
    while not workers <= counting_pids(operated.metrics_dir):  # until each worker has answered some
        assert sent < 300, "one worker took every connection"
        anonymous_mint(operated.url)
        sent += 1
    for _ in range(4):  # whichever worker answers /metrics, the same sum
        assert counts(operated.url)["not_authenticated"] == before + sent

    browser = logged_in(operated.url)
    assert mint(browser).status_code == 200
    browser.close()
    text = httpx2.get(f"{operated.url}/metrics", timeout=10).text
    assert counts(operated.url)["minted"] >= 1
    assert re.search(r'^sports_token_upstream_seconds_count\{result="ok"\} [1-9]', text, re.MULTILINE), text


def test_a_dead_workers_counts_stay(operated: Operated) -> None:
    before = counts(operated.url)
    victim = next(iter(counting_pids(operated.metrics_dir) & gunicorn_workers(operated.node)))
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while victim in gunicorn_workers(operated.node) or len(gunicorn_workers(operated.node)) < 2:
        assert time.monotonic() < deadline, "gunicorn did not replace the killed worker"
        time.sleep(0.2)
    assert counts(operated.url) == before
    anonymous_mint(operated.url)
    # Read until it shows, within a bound: once, under a loaded gate, the first read after a replacement lagged.
    expected = before.get("not_authenticated", 0) + 1
    deadline = time.monotonic() + 5
    while (now := counts(operated.url).get("not_authenticated", 0)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert now == expected, (before, now)


def probe(url: str) -> httpx2.Response:
    started = time.monotonic()
    answer = httpx2.get(f"{url}/readyz", timeout=10)
    assert time.monotonic() - started < WITHIN_SECONDS
    assert "Traceback" not in answer.text
    assert "127.0.0.1" not in answer.text
    assert "localhost" not in answer.text
    return answer


def until_ready(url: str) -> None:
    """Ready again, at every worker: each reads its stores at most once a second (readiness.STORE_INTERVAL)."""
    deadline = time.monotonic() + 20
    while probe(url).status_code != 200:
        assert time.monotonic() < deadline, "not ready again within 20 s"
        time.sleep(0.2)
    time.sleep(STORE_INTERVAL)  # the other worker's last report is at most this old
    while not all(probe(url).status_code == 200 for _ in range(4)):
        assert time.monotonic() < deadline, "not ready again at every worker within 20 s"
        time.sleep(0.2)


def not_ready_soon(url: str, check: str, state: str) -> None:
    """Within a second of a store's change, and the checks' own bound, every worker says so (four probes)."""
    deadline = time.monotonic() + STORE_INTERVAL + WITHIN_SECONDS
    while probe(url).status_code == 200:
        assert time.monotonic() < deadline, f"still ready {STORE_INTERVAL + WITHIN_SECONDS} s after the change"
        time.sleep(0.1)
    time.sleep(STORE_INTERVAL)  # the other worker's earlier report has aged out too
    for _ in range(4):  # both workers
        assert_not_ready(probe(url), check, state)


def assert_not_ready(answer: httpx2.Response, check: str, state: str) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["ready"] is False
    assert answer.json()["checks"][check] == state, answer.text
    assert int(answer.headers["Retry-After"]) > 0
    assert answer.headers["Cache-Control"] == "no-store"


def test_a_frozen_then_stopped_redis(operated: Operated) -> None:
    operated.redis.hang()
    try:
        not_ready_soon(operated.url, "cache", "timeout")
    finally:
        operated.redis.resume()
    until_ready(operated.url)

    before = counts(operated.url).get("rate_limit_unavailable", 0)
    browser = logged_in(operated.url)  # the login throttle needs Redis too
    operated.redis.stop()
    try:
        not_ready_soon(operated.url, "cache", "unavailable")
        assert mint(browser).json()["error"] == "rate_limit_unavailable"
        assert counts(operated.url)["rate_limit_unavailable"] == before + 1
    finally:
        browser.close()
        operated.redis.start()
    until_ready(operated.url)


def test_a_cut_then_silent_database(operated: Operated) -> None:
    operated.database.cut()
    try:
        not_ready_soon(operated.url, "database", "unavailable")
    finally:
        operated.database.restore()
    until_ready(operated.url)

    operated.database.silence()
    try:
        not_ready_soon(operated.url, "database", "timeout")
    finally:
        operated.database.restore()
    until_ready(operated.url)


def installed(*programs: str, package: str) -> str:
    """The first of `programs` on the PATH (a Debian package's; .ci/run installs it): skipped without any,
    failed under CI."""
    found = next(filter(None, map(shutil.which, programs)), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{programs[0]} is not installed: apt-get install {package}")
        pytest.skip(f"{programs[0]} is not installed (apt-get install {package})")
    return found


@contextmanager
def serving(command: list[str], log: Path) -> Iterator[None]:
    """A server run with `command` for the block, its output in `log`; stopped (bounded) after it."""
    with log.open("wb") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)  # noqa: S603 - Debian's binaries
        try:
            yield
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)


@dataclass
class Watching:
    api: str  # Prometheus's HTTP API
    pager: Pager
    folder: Path  # the servers' configurations, data and logs

    def logs(self) -> str:
        return "\n".join(f"{log.name}:\n{log.read_text()[-3000:]}" for log in sorted(self.folder.glob("*.log")))


def until_answered(url: str, what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx2.get(url, timeout=2).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        assert time.monotonic() < deadline, f"{what} did not start within 30 s:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def watching(operated: Operated, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watching]:
    """Debian's Alertmanager with the shipped routing, its receivers pointed at a Pager, and Debian's Prometheus
    with the shipped scrape configuration and rules, pointed at this node and that Alertmanager. Prometheus
    scrapes and evaluates every second; the rules' windows and `for:` and the routing's waits are as shipped."""
    prometheus = installed("prometheus", package="prometheus")
    alertmanager = installed("prometheus-alertmanager", "alertmanager", package="prometheus-alertmanager")
    folder = tmp_path_factory.mktemp("watching")
    pager = Pager()
    routing: dict[str, Any] = yaml.safe_load(ROUTING.read_text())
    for receiver in routing["receivers"]:
        for webhook in receiver["webhook_configs"]:
            webhook["url"] = f"{pager.url}/{receiver['name']}"
    (folder / "alertmanager.yml").write_text(yaml.safe_dump(routing))
    alertmanager_port = free_port()
    config: dict[str, Any] = yaml.safe_load(SCRAPE.read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(SCRAPE.parent / name) for name in config["rule_files"]]
    config["scrape_configs"][0]["static_configs"] = [{"targets": [operated.url.removeprefix("http://")]}]
    config["alerting"]["alertmanagers"][0]["static_configs"] = [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    prometheus_port = free_port()
    routes = [
        alertmanager,
        f"--config.file={folder / 'alertmanager.yml'}",
        f"--storage.path={folder / 'alertmanager'}",
        f"--web.listen-address=127.0.0.1:{alertmanager_port}",
        "--cluster.listen-address=",  # one Alertmanager, no peers
        "--log.level=warn",
    ]
    scrapes = [
        prometheus,
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'prometheus'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}",
        "--log.level=warn",
    ]
    try:
        with serving(routes, folder / "alertmanager.log"), serving(scrapes, folder / "prometheus.log"):
            # Prometheus drops the alerts it cannot deliver and sends them again a minute later: Alertmanager first.
            until_answered(f"http://127.0.0.1:{alertmanager_port}/-/ready", "Alertmanager", folder / "alertmanager.log")
            until_answered(f"http://127.0.0.1:{prometheus_port}/-/ready", "Prometheus", folder / "prometheus.log")
            yield Watching(f"http://127.0.0.1:{prometheus_port}/api/v1", pager, folder)
    finally:
        pager.close()


def query(watching: Watching, promql: str) -> list[Any]:
    try:
        found: list[Any] = httpx2.get(f"{watching.api}/query", params={"query": promql}, timeout=5).json()["data"][
            "result"
        ]
    except (httpx2.TransportError, ValueError, KeyError):
        return []
    return found


def test_a_real_prometheus_scrapes_make_serve_and_answers_the_routes_counter(
    operated: Operated, watching: Watching
) -> None:
    anonymous_mint(operated.url)  # the counter exists whatever ran before (seen missing twice beside the matrix)
    expected = counts(operated.url)["not_authenticated"]
    promql = 'sum(sports_token_requests_total{outcome="not_authenticated"})'
    deadline = time.monotonic() + 60
    while not (found := query(watching, promql)) or float(found[0]["value"][1]) != expected:
        assert time.monotonic() < deadline, (found, expected, watching.logs())
        time.sleep(0.5)
    timed = query(watching, 'sum(sports_token_request_seconds_count{outcome="not_authenticated"})')
    assert float(timed[0]["value"][1]) == expected  # every answer counted is timed, across both workers
    rules = httpx2.get(f"{watching.api}/rules", timeout=5).json()["data"]["groups"]
    loaded = {rule["name"] for group in rules for rule in group["rules"]}
    assert {"SportsTokenAnswersFailing", "SportsServiceFailing", "sports_token:objective:ratio"} <= loaded
    targets = httpx2.get(f"{watching.api}/targets", timeout=5).json()["data"]["activeTargets"]
    assert [target["health"] for target in targets] == ["up"]
    routed = httpx2.get(f"{watching.api}/alertmanagers", timeout=5).json()["data"]["activeAlertmanagers"]
    assert len(routed) == 1


def at_its_scheduled_refresh(browser: httpx2.Client, node: Cluster, left: timedelta) -> httpx2.Client:
    """`browser` as a page whose token is past half its life, `left` to go: the time its client refreshes
    it, and the route mints for it. The token is minted now; its record in the remembered-token cookie is
    read and written again with that expiry by mintroute.reuse itself, under the site's key."""
    assert refresh(browser, reason="initial").status_code == 200
    cookie = next(cookie for cookie in browser.cookies.jar if cookie.name == TOKEN_COOKIE)
    sent: SimpleCookie = SimpleCookie()
    sent.load(f"{TOKEN_COOKIE}={cookie.value}")
    with override_settings(SECRET_KEY=node.environment["DJANGO_SECRET_KEY"]):
        request = HttpRequest()
        request.COOKIES[TOKEN_COOKIE] = sent[TOKEN_COOKIE].value
        record = json.loads(request.get_signed_cookie(TOKEN_COOKIE, salt=TOKEN_COOKIE_SALT))
        aged = HttpResponse()
        expires_at = (datetime.now(UTC) + left).isoformat()
        reuse.remember(aged, {"token": record["token"], "expiresAt": expires_at}, record["ttl"], record["login"])
    cookie.value = aged.cookies[TOKEN_COOKIE].coded_value
    return browser


def refresh(browser: httpx2.Client, reason: str = "refresh") -> httpx2.Response:
    return browser.post(
        "/api/sports-token", json={"reason": reason}, headers={"X-CSRFToken": browser.cookies["csrftoken"]}
    )


def test_an_outage_of_the_service_pages_while_every_user_is_still_answered(
    operated: Operated, watching: Watching
) -> None:
    """Three pages at their scheduled refresh (a token past half its life: the route mints for each) when the
    service is cut off. Each asks again every second, as the browser client does on its backoff when answered
    its own token again. Every answer is 200 (ridden through with the held token, minutes of it left) until
    the page arrives: from the rules (SportsServiceFailing, the mints failing, fires after its 30 s `for:`),
    through Alertmanager's 10 s group_wait, at the webhook, within 2 minutes of the cut (about 45 s here).
    The first error a page on the default schedule can see is later still: its held token must have run
    down to a minute."""
    pages = [at_its_scheduled_refresh(logged_in(operated.url), operated.node, timedelta(seconds=250)) for _ in range(3)]
    ridden_before = counts(operated.url).get("ridden_through", 0)
    operated.service_link.cut()
    cut = time.monotonic()
    try:
        while not (paged := watching.pager.pages(cut)):
            assert time.monotonic() - cut < PAGE_WITHIN_SECONDS, f"no page within 2 minutes\n{watching.logs()}"
            for browser in pages:
                answer = refresh(browser)
                assert answer.status_code == 200, (round(time.monotonic() - cut), answer.text)
            time.sleep(1)
    finally:
        operated.service_link.restore()
        for browser in pages:
            browser.close()
    arrived, page = paged[0]
    alerts = {alert["labels"]["alertname"]: alert["labels"] for alert in page["alerts"]}
    assert set(alerts) <= {"SportsServiceFailing", "SportsServiceDown"}, alerts
    assert all(labels["severity"] == "page" for labels in alerts.values())
    assert counts(operated.url)["ridden_through"] > ridden_before  # the answers were ridden through, not reused
    print(f"paged {arrived - cut:.0f} s after the service was cut off")  # the measure, seen with -s
    until_ready(operated.url)


def test_the_service_killed(operated: Operated) -> None:
    """An outage of the service is every node's at once: reported, never a reason to take this one out."""
    deadline = time.monotonic() + 30  # each worker asks the service at most once per 10 s
    while service_up(operated.url) != 1.0:  # back from the outage a test above made
        assert time.monotonic() < deadline, "sports_service_up does not say the service answers"
        time.sleep(0.2)
    operated.service._process.kill()
    operated.service._process.wait(timeout=10)
    deadline = time.monotonic() + 30  # each worker asks the service at most once per 10 s
    unavailable = 0
    while unavailable < 4:
        assert time.monotonic() < deadline, "the probe did not see the service go"
        answer = probe(operated.url)
        assert answer.status_code == 200, answer.text
        assert answer.json()["ready"] is True
        assert answer.json()["checks"]["database"] == answer.json()["checks"]["cache"] == "ok"
        if answer.json()["checks"]["service"] == "unavailable":
            unavailable += 1
        time.sleep(0.2)
    # The newest check of either worker: one that began before the kill may end after the first that failed.
    while service_up(operated.url) != 0.0:
        assert time.monotonic() < deadline, "sports_service_up still says the service answers"
        time.sleep(0.2)
    assert httpx2.get(f"{operated.url}/healthz", timeout=10).status_code == 200  # liveness: unchanged


def service_up(url: str) -> float:
    """`sports_service_up`, one value whichever worker answers (the latest check of any live worker)."""
    answer = httpx2.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200, answer.text
    (value,) = re.findall(r"^sports_service_up (\S+)$", answer.text, re.MULTILINE)
    return float(value)


def test_metrics_stay_404_for_a_stranger_and_with_a_wrong_token(operated: Operated) -> None:
    relayed = httpx2.get(f"{operated.url}/metrics", headers={"X-Forwarded-For": "198.51.100.1"}, timeout=10)
    assert relayed.status_code == 404
    assert "sports_token" not in relayed.text  # loopback itself may read it: every test above did


def test_a_hundred_probes_a_second_open_at_most_one_store_connection_a_second_per_worker(operated: Operated) -> None:
    """/readyz is no load source: within a second every probe of a worker reads the same run of each store check."""
    probes_per_second, seconds = 100, 3
    redis_client = redis.Redis.from_url(operated.redis.url)
    redis_before = int(redis_client.info("stats")["total_connections_received"])
    database_before = operated.database.accepted
    with httpx2.Client(base_url=operated.url, timeout=WITHIN_SECONDS + 1) as prober:
        started = time.monotonic()
        for number in range(probes_per_second * seconds):
            time.sleep(max(0.0, started + number / probes_per_second - time.monotonic()))
            answer = prober.get("/readyz")  # 200: the stores are ok, whatever the service (killed above)
            assert answer.json()["checks"]["database"] == answer.json()["checks"]["cache"] == "ok", answer.text
        elapsed = time.monotonic() - started
    redis_opened = int(redis_client.info("stats")["total_connections_received"]) - redis_before
    database_opened = operated.database.accepted - database_before
    bound = operated.node.workers * (elapsed + 1)  # one a second per worker, and the second under way
    assert database_opened <= bound, (database_opened, elapsed)
    assert redis_opened <= bound, (redis_opened, elapsed)
    redis_client.close()
