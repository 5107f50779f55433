"""`GET /readyz` and `GET /metrics` (mintroute.operations), in a process of the site: who may read the
metrics, what the probe answers and how fast, whatever hangs beneath it (its own Redis frozen, a
service that never answers), with the real components. Ready is this process's: its stores, and
whether it is stopping; the service's state is in the body and `sports_service_up`, never the status.
Under `make serve`: tests/production/test_operating.py, and the drain tests/production/test_make_serve.py."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from config.redis_sentinel import cache_settings
from mintroute import readiness
from sportsproxy.sandbox.clock import ManualClock
from tests.counting_service import CountingService
from tests.redis_server import RedisServer, SentinelServer
from tests.upstreams import closed_port_url, fake_upstream

WITHIN_SECONDS = 2  # the rule's bound for /readyz, whatever hangs beneath it
TOKEN = "metrics-token-0123456789abcdef"
REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"


@pytest.fixture(autouse=True)
def fresh_checks(monkeypatch: pytest.MonkeyPatch, clock: ManualClock) -> ManualClock:
    """Checks with no memory of earlier tests. Their clock is the real one (a probe's deadline is what
    its threads wait on) plus however far the test moved `clock` (the service's 10 s)."""
    start, real = clock.now(), time.monotonic
    monkeypatch.setattr(readiness, "monotonic", lambda: real() + (clock.now() - start).total_seconds())
    for name, probe, interval in (
        ("DATABASE", readiness.probe_database, 0.0),
        ("CACHE", readiness.probe_cache, 0.0),
        ("SERVICE", readiness.probe_service, readiness.SERVICE_INTERVAL),
    ):
        check = readiness.Check(name.lower(), probe, interval, report=getattr(readiness, name).report)
        monkeypatch.setattr(readiness, name, check)
    return clock


def get(path: str, **headers: Any) -> Any:
    return Client(**headers).get(path)


# --- /readyz --------------------------------------------------------------------------------------


def test_ready_when_everything_answers_without_a_session_or_a_cache() -> None:
    answer = get("/readyz")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"ready": True, "checks": {"database": "ok", "service": "ok"}}  # no Redis: no cache check
    assert answer["Cache-Control"] == "no-store"
    assert not answer.cookies  # no session, no CSRF cookie
    assert "Retry-After" not in answer


def test_the_probe_is_counted_by_no_limit(settings: Any) -> None:
    settings.SPORTS_TOKEN_RATE = "1/m"
    assert [get("/readyz", REMOTE_ADDR="203.0.113.4").status_code for _ in range(15)] == [200] * 15


def test_only_get_and_head() -> None:
    assert Client().post("/readyz").status_code == 405
    assert Client().head("/readyz").status_code == 200


def test_healthz_is_unchanged_while_a_dependency_is_down(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}}
    own_redis.stop()
    assert get("/readyz").status_code == 503
    healthz = get("/healthz")
    assert healthz.status_code == 200
    assert healthz.json() == {"status": "ok"}


def assert_not_ready(answer: Any, **states: str) -> dict[str, str]:
    assert answer.status_code == 503, answer.content
    body = answer.json()
    assert body["ready"] is False
    for name, state in states.items():
        assert body["checks"][name] == state, body
    assert int(answer["Retry-After"]) > 0
    assert answer["Cache-Control"] == "no-store"
    assert "127.0.0.1" not in answer.content.decode()
    assert "Traceback" not in answer.content.decode()
    checks: dict[str, str] = body["checks"]
    return checks


def timed_get(path: str) -> tuple[Any, float]:
    started = time.monotonic()
    answer = get(path)
    return answer, time.monotonic() - started


def test_a_frozen_redis_is_a_timeout_within_2_s_then_ready_again(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}}
    assert get("/readyz").json()["checks"] == {"database": "ok", "cache": "ok", "service": "ok"}
    own_redis.hang()
    try:
        for _ in range(3):  # the run still hung is waited on, not doubled
            answer, took = timed_get("/readyz")
            assert took < WITHIN_SECONDS
            assert_not_ready(answer, cache="timeout", database="ok")
    finally:
        own_redis.resume()
    deadline = time.monotonic() + 10
    while get("/readyz").status_code != 200:  # the hung run ends at its own bound, then a new one answers
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_stopped_redis_is_unavailable(own_redis: RedisServer, settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": own_redis.url}}
    own_redis.stop()
    assert_not_ready(get("/readyz"), cache="unavailable")


def test_a_replica_is_unavailable_only_a_primary_that_takes_writes_is_ok(own_redis: RedisServer, settings: Any) -> None:
    replica = RedisServer(own_redis)
    replica.start()
    try:
        replica.wait_in_sync()
        settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": replica.url}}
        assert_not_ready(get("/readyz"), cache="unavailable")  # it answers PING all the same
        settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": own_redis.url}}
        assert get("/readyz").json()["checks"]["cache"] == "ok"
    finally:
        replica.stop()


def test_the_cache_check_asks_sentinel_as_the_site_does(own_redis: RedisServer, settings: Any, tmp_path: Path) -> None:
    sentinel = SentinelServer(own_redis, tmp_path)
    sentinel.start()
    try:
        location = f"redis://{SentinelServer.SERVICE}/0"
        bounds = {"socket_connect_timeout": 2.0, "socket_timeout": 2.0}
        settings.CACHES = {"default": cache_settings(location, [("127.0.0.1", sentinel.port)], bounds)}
        assert get("/readyz").json()["checks"]["cache"] == "ok"
        sentinel.stop()  # no Sentinel names a primary: the site's cache cannot work, nor can this check
        assert_not_ready(get("/readyz"), cache="unavailable")
    finally:
        sentinel.stop()


def service_reported(answer: Any) -> str:
    """The service's state in a /readyz answer that is ready all the same: the service is reported, never gated on."""
    assert answer.status_code == 200, answer.content
    assert answer.json()["ready"] is True
    assert "Retry-After" not in answer
    state: str = answer.json()["checks"]["service"]
    return state


def test_a_service_that_never_answers_is_a_timeout_within_2_s_and_still_ready(settings: Any) -> None:
    with fake_upstream(lambda body: None) as url:  # reads the request, never answers
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", url
        answer, took = timed_get("/readyz")
    assert took < WITHIN_SECONDS
    assert service_reported(answer) == "timeout"
    assert answer.json()["checks"]["database"] == "ok"


def test_a_service_that_refuses_is_unavailable_and_still_ready(settings: Any) -> None:
    settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", closed_port_url()
    assert service_reported(get("/readyz")) == "unavailable"


def test_the_service_is_asked_at_most_once_per_10_s(settings: Any, fresh_checks: ManualClock) -> None:
    service = CountingService()
    try:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", service.url
        assert [service_reported(get("/readyz")) for _ in range(5)] == ["ok"] * 5
        assert service.requests == 1
        fresh_checks.advance(9)
        get("/readyz")
        assert service.requests == 1
        fresh_checks.advance(1)
        get("/readyz")
        assert service.requests == 2
        service.switch("down")
        assert service_reported(get("/readyz")) == "ok"  # the answer of 0 s ago still stands
        fresh_checks.advance(10)
        assert service_reported(get("/readyz")) == "unavailable"
    finally:
        service.close()


@pytest.fixture
def stopping(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process stopping, as its server's drain makes it (config/drain.py); only for this test."""
    monkeypatch.setattr(readiness, "_stopping", threading.Event())
    readiness.begin_stopping()


@pytest.mark.usefixtures("stopping")
def test_a_stopping_process_is_not_ready_and_says_so() -> None:
    answer = get("/readyz")
    assert answer.status_code == 503, answer.content
    assert answer.json() == {"ready": False, "stopping": True, "checks": {"database": "ok", "service": "ok"}}
    assert int(answer["Retry-After"]) > 0
    assert answer["Cache-Control"] == "no-store"
    assert get("/healthz").status_code == 200  # it still serves: the drain


def test_probes_within_a_second_share_one_run_of_the_database_check(
    monkeypatch: pytest.MonkeyPatch, fresh_checks: ManualClock
) -> None:
    runs: list[float] = []

    def counted() -> None:
        runs.append(readiness.monotonic())
        readiness.probe_database()

    monkeypatch.setattr(readiness, "DATABASE", readiness.Check("database", counted, readiness.STORE_INTERVAL))
    assert [get("/readyz").status_code for _ in range(30)] == [200] * 30
    assert len(runs) == 1
    fresh_checks.advance(1)
    assert get("/readyz").status_code == 200
    assert len(runs) == 2  # the next second, one more run


# --- /metrics -------------------------------------------------------------------------------------


@pytest.fixture
def metrics_on(settings: Any) -> None:
    settings.SPORTS_METRICS = True


def test_metrics_are_404_while_off() -> None:
    assert get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404


@pytest.mark.usefixtures("metrics_on")
def test_metrics_answer_loopback_in_prometheus_text() -> None:
    answer = get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain; version=")
    assert answer["Cache-Control"] == "no-store"
    assert "# TYPE sports_token_requests_total counter" in answer.content.decode()
    assert "sports_login_throttled_total" in answer.content.decode()
    assert not answer.cookies
    assert get("/metrics", REMOTE_ADDR="::1").status_code == 200


@pytest.mark.usefixtures("metrics_on")
def test_metrics_are_404_for_another_address_unless_allowed(settings: Any) -> None:
    assert get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 404
    settings.SPORTS_METRICS_ALLOW = ["10.0.0.0/8", "203.0.113.9"]
    assert get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200
    assert get("/metrics", REMOTE_ADDR="10.20.30.40").status_code == 200
    assert get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404  # the list replaces the default


@pytest.mark.usefixtures("metrics_on")
def test_the_bearer_token_reads_from_anywhere(settings: Any) -> None:
    settings.SPORTS_METRICS_TOKEN = TOKEN
    assert get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN}x").status_code == 404
    assert get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 404
    settings.SPORTS_METRICS_TOKEN = ""
    assert get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer ").status_code == 404


@pytest.mark.usefixtures("metrics_on")
def test_a_request_relayed_by_an_untrusted_proxy_is_not_loopback(settings: Any) -> None:
    """A proxy on the same machine makes every caller's peer 127.0.0.1."""
    relayed = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    assert get("/metrics", **relayed).status_code == 404
    assert get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_FORWARDED="for=198.51.100.7").status_code == 404
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    assert get("/metrics", **relayed).status_code == 404  # the forwarded address counts: not allowed
    assert get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 200


@pytest.mark.usefixtures("metrics_on")
def test_a_trusted_proxy_that_does_not_say_whom_it_relays_for_fails_closed(settings: Any) -> None:
    """Fewer X-Forwarded-For entries than SPORTS_TRUSTED_PROXY_COUNT: the client is unknown, so not allowed
    (a scraper on the proxy's own machine uses SPORTS_METRICS_TOKEN)."""
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    assert get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404
    assert get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="127.0.0.1").status_code == 404
    settings.SPORTS_TRUSTED_PROXY_COUNT = 2
    assert get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 404
    assert get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1, 10.0.0.2").status_code == 200
    settings.SPORTS_METRICS_TOKEN = TOKEN
    assert get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


SERVICE_UP = re.compile(r"^sports_service_up (\S+)$", re.MULTILINE)


def service_up() -> float:
    """`sports_service_up` as /metrics says it now."""
    answer = get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert answer.status_code == 200
    (value,) = SERVICE_UP.findall(answer.content.decode())
    return float(value)


@pytest.mark.usefixtures("metrics_on")
def test_sports_service_up_follows_the_service_checked_at_most_once_per_10_s(
    settings: Any, fresh_checks: ManualClock
) -> None:
    """A scrape asks the service itself (so the gauge moves with nothing probing /readyz), within the same
    interval as the probe: scrapes and probes of one interval share one run."""
    service = CountingService()
    try:
        settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = "http", service.url
        assert [service_up() for _ in range(3)] == [1.0] * 3
        assert service_reported(get("/readyz")) == "ok"
        assert service.requests == 1
        service.switch("hanging")
        fresh_checks.advance(10)
        started = time.monotonic()
        assert service_up() == 0.0  # the run's own bound ends it as a timeout, within the scrape's wait
        assert time.monotonic() - started < WITHIN_SECONDS
        assert service_reported(get("/readyz")) == "timeout"  # the scrape's run, read by the probe
        service.switch("ok")
        fresh_checks.advance(10)
        assert service_up() == 1.0
        service.switch("down")
        fresh_checks.advance(10)
        assert service_up() == 0.0
        assert service.requests == 3  # one a run; the refused one never arrived
    finally:
        service.close()


@pytest.mark.usefixtures("metrics_on")
def test_site_mode_shows_the_site_tokens_age_and_life_left(settings: Any, site_key: str) -> None:
    from tests.mintroute.conftest import logged_in_browser, post_token

    settings.SPORTS_TOKEN_SHARING = "site"
    assert post_token(logged_in_browser()).status_code == 200
    text = get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    assert "sports_token_site_token_age_seconds 0.0" in text
    assert "sports_token_site_token_left_seconds 600.0" in text
    settings.SPORTS_TOKEN_SHARING = "login"
    assert "sports_token_site_token_age_seconds" not in get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()


def test_a_wrong_allow_list_is_a_check_error(settings: Any) -> None:
    from django.core import checks

    settings.SPORTS_METRICS_ALLOW = ["not-an-address"]
    assert "mintroute.E020" in {message.id for message in checks.run_checks()}


@pytest.fixture
def no_prometheus_client(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "prometheus_client" else real(name, *a)
    )


@pytest.mark.usefixtures("metrics_on", "no_prometheus_client")
def test_metrics_on_without_the_library_is_a_check_error_naming_the_extra() -> None:
    from django.core import checks

    found = [message for message in checks.run_checks() if message.id == "mintroute.E021"]
    assert found, "no mintroute.E021"
    assert "the `metrics` extra" in str(found[0].hint)
    assert get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404
