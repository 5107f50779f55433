"""The route's metrics (mintroute.metrics): one count per answer, made where the route decides it, under
both entries and in both SPORTS_TOKEN_SHARING modes, with the answer's time by the same outcome;
tokens.create timed by result; throttled logins counted; nothing counted while SPORTS_METRICS is off."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from prometheus_client import REGISTRY

from mintroute import metrics, metrics_folder
from sportsproxy.sandbox.clock import ManualClock
from tests.mintroute.entries import Entry
from tests.mintroute.test_ridethrough import failing
from tests.upstreams import closed_port_url

REQUESTS = "sports_token_requests_total"
UPSTREAM = "sports_token_upstream_seconds_count"
TIMED_ANSWERS = "sports_token_request_seconds"


def samples(name: str, label: str) -> dict[str, float]:
    """The current value of every sample of `name`, by the value of its `label`."""
    return {
        sample.labels.get(label, ""): sample.value
        for family in REGISTRY.collect()
        for sample in family.samples
        if sample.name == name
    }


class Delta:
    """What `name` counted by `label` between the start of the block and `now()`."""

    def __init__(self, name: str, label: str) -> None:
        self.name, self.label = name, label
        self.before = samples(name, label)

    def now(self) -> dict[str, float]:
        after = samples(self.name, self.label)
        before = self.before
        return {key: value - before.get(key, 0) for key, value in after.items() if value != before.get(key, 0)}


@pytest.fixture
def metrics_on(settings: Any) -> None:
    settings.SPORTS_METRICS = True
    metrics._metrics()  # the families exist, so a delta starts from their values


@pytest.mark.usefixtures("metrics_on")
def test_each_answer_is_counted_once_by_its_outcome(
    entry: Entry, sharing: str, settings: Any, one_clock: ManualClock
) -> None:
    answers = Delta(REQUESTS, "outcome")
    calls = Delta(UPSTREAM, "result")
    browser = entry.browser()
    assert browser.mint().status_code == 200  # minted
    assert browser.mint().status_code == 200  # the same token again
    assert entry.anonymous().mint().status_code == 401
    assert browser.mint(csrf=False).status_code == 403
    one_clock.advance(539)  # past half-life, 61 s left: the route mints again
    with failing(settings, "down"):
        assert browser.mint().status_code == 200  # ridden through
        one_clock.advance(1)
        assert browser.mint().status_code == 503
    handed_out = "shared" if sharing == "site" else "reused"
    assert answers.now() == {
        "minted": 1,
        handed_out: 1,
        "not_authenticated": 1,
        "csrf_failed": 1,
        "ridden_through": 1,
        "upstream_unavailable": 1,
    }
    assert calls.now() == {"ok": 1, "unavailable": 2}


def bucket(outcome: str, le: str) -> float:
    """The `sports_token_request_seconds` bucket `le` of `outcome`, now."""
    return sum(
        sample.value
        for family in REGISTRY.collect()
        for sample in family.samples
        if sample.name == f"{TIMED_ANSWERS}_bucket" and sample.labels == {"outcome": outcome, "le": le}
    )


class Ticks:
    """A clock for metrics.clock that moves `step` seconds each time it is read: the route reads it once when
    it first sees a request and once when it counts the answer, so every answer takes `step`."""

    def __init__(self, step: float) -> None:
        self.step, self.now = step, 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.usefixtures("metrics_on")
def test_each_answer_is_timed_by_its_outcome_where_it_is_counted(entry: Entry, monkeypatch: pytest.MonkeyPatch) -> None:
    """The view's answers, a refusal of route_answers_json before the chain (an oversize body) and one it makes
    of Django's answer: each counted once and timed once, by the same outcome, from when the route first saw it."""
    monkeypatch.setattr(metrics, "clock", Ticks(3.0))
    answers = Delta(REQUESTS, "outcome")
    timed = Delta(f"{TIMED_ANSWERS}_count", "outcome")
    total = Delta(f"{TIMED_ANSWERS}_sum", "outcome")
    fast, slow = bucket("minted", "2.5"), bucket("minted", "5.0")
    browser = entry.browser()
    assert browser.mint().status_code == 200
    assert browser.mint("x" * 2000).status_code == 400  # refused by the middleware before the chain
    assert entry.anonymous().mint().status_code == 401
    counted = {"minted": 1, "bad_request": 1, "not_authenticated": 1}
    assert answers.now() == timed.now() == counted
    assert total.now() == {outcome: 3.0 * times for outcome, times in counted.items()}
    assert (bucket("minted", "2.5"), bucket("minted", "5.0")) == (fast, slow + 1)


@pytest.mark.usefixtures("metrics_on")
def test_a_rate_limit_store_that_fails_closed_is_counted(entry: Entry, settings: Any) -> None:
    answers = Delta(REQUESTS, "outcome")
    browser = entry.browser()
    location = closed_port_url().replace("http://", "redis://")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}
    assert browser.mint().status_code == 503
    assert answers.now() == {"rate_limit_unavailable": 1}


@pytest.mark.usefixtures("metrics_on")
def test_a_refused_method_and_a_rate_limited_caller_are_counted(entry: Entry, settings: Any) -> None:
    answers = Delta(REQUESTS, "outcome")
    settings.SPORTS_TOKEN_RATE = "1/m"
    browser = entry.browser()
    assert browser.mint('{"reason": "unauthorized"}').status_code == 200
    assert browser.mint('{"reason": "unauthorized"}').status_code == 429
    assert browser.request("get").status_code == 405
    assert answers.now() == {"minted": 1, "rate_limited": 1, "method_not_allowed": 1}


def test_nothing_is_counted_while_metrics_are_off(entry: Entry, settings: Any) -> None:
    settings.SPORTS_METRICS = False
    answers = Delta(REQUESTS, "outcome")
    calls = Delta(UPSTREAM, "result")
    browser = entry.browser()
    assert browser.mint().status_code == 200
    assert entry.anonymous().mint().status_code == 401
    assert answers.now() == {}
    assert calls.now() == {}


@pytest.mark.usefixtures("metrics_on")
def test_a_throttled_login_is_counted() -> None:
    throttled = Delta("sports_login_throttled_total", "")
    for number in range(12):
        Client(REMOTE_ADDR="203.0.113.8").post("/accounts/login/", {"username": "nobody", "password": f"g{number}"})
    assert throttled.now() == {"": 2}  # the 11th and the 12th were refused


def test_the_metrics_library_is_imported_only_when_metrics_are_on() -> None:
    """A site without prometheus_client works: the module imports it lazily (the clean-process check
    of what importing each part loads is tests/standalone/test_import_rules.py)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(metrics.__file__).read_text())
    top_level = {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert "prometheus_client" not in top_level


def test_the_families_are_made_once_when_many_threads_ask_at_once() -> None:
    """A gthread worker's first requests count at the same moment (found by `make bench`: with a plain
    cache, two threads registered the families twice, and the worker counted nothing after)."""
    import threading
    import time

    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    made: list[object] = []

    def make() -> object:
        time.sleep(0.05)  # a window for the other threads
        made.append(metrics.make_metrics(registry))
        return made[-1]

    first_use = metrics.Once(make)
    together = threading.Barrier(8)
    errors: list[BaseException] = []

    def ask() -> None:
        together.wait(timeout=10)
        try:
            first_use()
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert errors == []
    assert len(made) == 1


@pytest.mark.django_db(transaction=True)  # the callers' threads see the users
@pytest.mark.usefixtures("metrics_on")
def test_site_mode_counts_the_one_mint_and_the_callers_it_served(settings: Any) -> None:
    """Eight callers at once: one mints in the single flight; the others are handed its token, whether
    they waited on the flight or came after it landed."""
    import threading

    from tests.mintroute.conftest import logged_in_browser, post_token

    settings.SPORTS_TOKEN_SHARING = "site"
    answers = Delta(REQUESTS, "outcome")
    browsers = [logged_in_browser(f"user{n}", REMOTE_ADDR=f"10.0.0.{n}") for n in range(8)]
    together = threading.Barrier(len(browsers))
    statuses: list[int] = []

    def call(browser: Client) -> None:
        together.wait(timeout=10)
        statuses.append(post_token(browser).status_code)

    threads = [threading.Thread(target=call, args=(browser,)) for browser in browsers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert statuses == [200] * 8
    assert answers.now() == {"minted": 1, "shared": 7}


@pytest.mark.usefixtures("metrics_on")
def test_a_code_the_service_made_up_is_counted_as_other(settings: Any) -> None:
    """The labels come from fixed sets: an upstream's own error code (any text) is `other`, never a new series."""
    from tests.mintroute.conftest import logged_in_browser, post_token
    from tests.upstreams import fake_upstream, http_response

    def made_up(request: bytes) -> bytes:
        asked = json.loads(request)
        error = {"code": "quota_of_the_moon_\u2603", "message": "no"}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "error": error}).encode())

    timed = Delta(UPSTREAM, "result")
    answers = Delta(REQUESTS, "outcome")
    with fake_upstream(made_up) as base_url:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", base_url
        settings.SPORTS_API_KEY = "sk_test_" + "m" * 40
        assert post_token(logged_in_browser()).status_code == 502
    assert timed.now() == {"other": 1}
    assert answers.now() == {"upstream_error": 1}
    assert metrics.bounded("upstream_error", metrics.OUTCOMES) == "upstream_error"
    assert metrics.bounded("anything else", metrics.OUTCOMES) == "other"


# --- the workers' metrics folder (mintroute/metrics_folder.py) -------------------------------------

WORKER = """
import os, sys
from prometheus_client import Counter, Histogram

answers = Counter("sports_token_requests", "Answers of POST /api/sports-token, by outcome.", ["outcome"])
upstream = Histogram("sports_token_upstream_seconds", "Time.", ["result"], buckets=(0.1, 1.0))
for _ in range(int(sys.argv[1])):
    answers.labels(outcome="minted").inc()
    upstream.labels(result="ok").observe(0.5)
print(os.getpid())
"""


def worker_counts(folder: Path, times: int) -> int:
    """A process that counts `times` answers in `folder` as a gunicorn worker does, then exits; its pid."""
    environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    ran = subprocess.run(  # noqa: S603 - this interpreter, fixed program
        [sys.executable, "-c", WORKER, str(times)], env=environment, capture_output=True, text=True, check=True
    )
    return int(ran.stdout)


def collected(folder: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in metrics_folder.Collector(folder).collect()
        for sample in family.samples
    }


MINTED = ("sports_token_requests_total", (("outcome", "minted"),))
TIMED = ("sports_token_upstream_seconds_count", (("result", "ok"),))


@pytest.fixture
def nothing_logged_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_folder, "_skipped", set())


@pytest.mark.usefixtures("metrics_on", "nothing_logged_yet")
def test_a_file_that_is_not_a_metrics_file_is_skipped_and_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    worker_counts(tmp_path, 3)
    whole = next(tmp_path.glob("counter_*.db")).read_bytes()
    planted = {
        "counter_101.db": b"",  # empty: struct.error in prometheus_client
        "counter_102.db": whole[:40],  # truncated
        "counter_103.db": bytes(range(256)) * 8,  # garbage
        "histogram_104.db": whole.replace(b"sports_token", b"\xff\xfe\xfd\xfc" * 3),  # not UTF-8
        "gauge.db": whole,  # a name the library cannot place
    }
    for name, content in planted.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "folder.db").mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    client = Client(REMOTE_ADDR="127.0.0.1")
    with caplog.at_level(logging.WARNING, logger="mintroute.metrics_folder"):
        for _ in range(3):
            answer = client.get("/metrics")
            assert answer.status_code == 200
            assert 'sports_token_requests_total{outcome="minted"} 3.0' in answer.content.decode()
    logged = [record.getMessage() for record in caplog.records]
    assert len(logged) == len(planted) + 1  # once each, however many scrapes
    for name in [*planted, "folder.db"]:
        assert sum(str(tmp_path / name) in line for line in logged) == 1


def test_dead_workers_are_folded_into_one_archive_and_their_counts_stay(tmp_path: Path) -> None:
    from prometheus_client.multiprocess import MultiProcessCollector

    alive = worker_counts(tmp_path, 1)  # its files stay: it is not dead
    for restart in range(1, 6):
        dead = worker_counts(tmp_path, restart)
        unfolded = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in MultiProcessCollector.merge([str(path) for path in tmp_path.glob("*.db")])  # type: ignore[no-untyped-call]
            for sample in family.samples
        }
        metrics_folder.fold_dead_worker(dead, tmp_path)
        assert collected(tmp_path) == unfolded  # every counter, bucket, sum and count as before the fold
        assert not list(tmp_path.glob(f"*_{dead}.db"))
        assert {path.name for path in tmp_path.glob("*.db")} == {
            "counter_archive.db",
            f"counter_{alive}.db",
            "histogram_archive.db",
            f"histogram_{alive}.db",
        }
    assert collected(tmp_path)[MINTED] == 1 + sum(range(1, 6))
    assert collected(tmp_path)[TIMED] == 1 + sum(range(1, 6))
    assert (tmp_path / "counter_archive.db").stat().st_mode & 0o077 == 0


@pytest.mark.usefixtures("nothing_logged_yet")
def test_a_fold_skips_a_file_that_is_not_a_metrics_file(tmp_path: Path) -> None:
    worker_counts(tmp_path, 2)
    (tmp_path / "counter_99.db").write_bytes(b"")  # a worker that died before it wrote a whole file
    metrics_folder.fold_dead_worker(99, tmp_path)
    assert collected(tmp_path)[MINTED] == 2
    assert not (tmp_path / "counter_99.db").exists()
