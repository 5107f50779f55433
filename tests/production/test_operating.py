"""Operating `make serve` (config.serve in production, 2 gunicorn workers, SPORTS_METRICS on): /metrics
adds up both workers' counts and keeps a dead worker's; a real Prometheus (Debian's) loads the
shipped scrape configuration and rules and answers a query of the route's counter; /readyz answers
within 2 s, 503 with the failing check, while its PostgreSQL (behind a TCP proxy) is cut or silent or
its own Redis is frozen or stopped; with the stand-in service (a standalone sandbox) killed it stays
200, the service `unavailable` in its body and `sports_service_up` 0 at /metrics.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
import redis
import yaml

from mintroute.readiness import STORE_INTERVAL
from sportsproxy.testing import SportsSandbox, start_sandbox
from tests import stores
from tests.production.cluster import PROJECT_ROOT, Cluster, free_port, logged_in, mint, require_engines
from tests.production.tcp_proxy import TcpProxy, postgres_proxy
from tests.production.test_make_serve import PRODUCTION
from tests.redis_server import RedisServer

WITHIN_SECONDS = 2  # the rule's bound for /readyz, whatever hangs beneath it
SCRAPE = PROJECT_ROOT / "deploy" / "prometheus" / "prometheus.yml"
COUNTER = re.compile(r'^sports_token_requests_total\{outcome="(\w+)"\} (\S+)$', re.MULTILINE)


@dataclass
class Operated:
    node: Cluster
    url: str
    database: TcpProxy
    redis: RedisServer
    service: SportsSandbox
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
    redis_server.start()
    database.start()
    node = Cluster(
        **PRODUCTION,
        REDIS_URL=redis_server.url,
        SPORTS_SANDBOX="0",
        SPORTS_BASE_URL=service.base_url,
        SPORTS_API_KEY=service.api_key,
        SPORTS_TOKEN_RATE="1000/m",
        SPORTS_METRICS="1",
    )
    node.environment.pop("PROMETHEUS_MULTIPROC_DIR", None)  # make serve makes its own
    node.environment["DATABASE_URL"] = stores.postgres_url(node.database, port=database.port)
    node.site_key = service.api_key
    node.workers = 2
    made: list[Path] = []
    try:
        _start(node)
        made.append(multiprocess_dir(node))
        yield Operated(node, node.urls[0], database, redis_server, service, made[0])
    finally:
        database.restore()
        _stop(node)
        database.stop()
        redis_server.stop()
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


def prometheus() -> str:
    found = shutil.which("prometheus")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("prometheus is not installed: apt-get install prometheus")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    return found


def test_a_real_prometheus_scrapes_make_serve_and_answers_the_routes_counter(
    operated: Operated, tmp_path: Path
) -> None:
    binary = prometheus()
    config: dict[str, Any] = yaml.safe_load(SCRAPE.read_text())  # the shipped one, pointed at this node
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(SCRAPE.parent / name) for name in config["rule_files"]]
    config["scrape_configs"][0]["static_configs"] = [{"targets": [operated.url.removeprefix("http://")]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    command = [binary, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}"]
    command += [f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    anonymous_mint(operated.url)  # the counter exists whatever ran before (seen missing twice beside the matrix)
    expected = counts(operated.url)["not_authenticated"]
    log = (tmp_path / "prometheus.log").open("wb")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603 - Debian's binary
    api = f"http://127.0.0.1:{port}/api/v1"
    try:
        query = 'sum(sports_token_requests_total{outcome="not_authenticated"})'
        deadline = time.monotonic() + 60
        found: list[Any] = []
        while time.monotonic() < deadline:
            try:
                found = httpx2.get(f"{api}/query", params={"query": query}, timeout=5).json()["data"]["result"]
            except (httpx2.TransportError, ValueError, KeyError):
                found = []
            if found:
                break
            time.sleep(0.5)
        assert found, (tmp_path / "prometheus.log").read_text()
        assert float(found[0]["value"][1]) == expected
        rules = httpx2.get(f"{api}/rules", timeout=5).json()["data"]["groups"]
        loaded = {rule["name"] for group in rules for rule in group["rules"]}
        assert {"SportsServiceFailing", "SportsRateLimitsFailingClosed"} <= loaded
        targets = httpx2.get(f"{api}/targets", timeout=5).json()["data"]["activeTargets"]
        assert [target["health"] for target in targets] == ["up"]
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


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


def test_the_service_killed(operated: Operated) -> None:
    """An outage of the service is every node's at once: reported, never a reason to take this one out."""
    assert service_up(operated.url) == 1.0
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
    assert service_up(operated.url) == 0.0  # the newest check of either worker
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
