"""What `make serve` runs, under a service that takes its whole SPORTS_TIMEOUT to answer."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from tests import slow_upstream
from tests.production.cluster import PROJECT_ROOT, Cluster, free_port, logged_in, require_engines

TIMEOUT_SECONDS = 2  # SPORTS_TIMEOUT: the stand-in service answers only after it
CONCURRENT_MINTS = 64
# A probe queued behind a mint would wait for a thread until that mint's timeout: half of it tells the two apart
# on a machine as busy as `make test` keeps it (100 ms was the figure on a quiet one, and 0.2 s was seen in the gate).
ANSWER_WITHIN_SECONDS = TIMEOUT_SECONDS / 2


@pytest.fixture(scope="module")
def slow_site() -> Iterator[Cluster]:
    require_engines()
    port = free_port()
    upstream = subprocess.Popen(  # noqa: S603 - fixed command
        [*slow_upstream.command(port), "--log-level", "warning"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "SLOW_UPSTREAM_DELAY": str(TIMEOUT_SECONDS + 3)},
    )
    site = Cluster(
        SPORTS_SANDBOX="0",
        SPORTS_BASE_URL=f"http://127.0.0.1:{port}",
        SPORTS_API_KEY="sk_test_" + "s" * 43,
        SPORTS_TIMEOUT=str(TIMEOUT_SECONDS),
        SPORTS_TOKEN_RATE=f"{10 * CONCURRENT_MINTS}/h",
        SPORTS_TOKEN_SHARING="login",  # every caller's own mint, each held by the slow service
        WEB_CONCURRENCY="2",
    )
    try:
        site.start(events_in=(False,))
        yield site
    finally:
        site.stop()
        upstream.terminate()
        upstream.wait(timeout=10)


def wait_until_the_service_holds(count: int, service: str) -> None:
    deadline = time.monotonic() + 15
    while httpx2.get(f"{service}/waiting", timeout=5).json()["waiting"] < count:
        assert time.monotonic() < deadline, "the mints did not all reach the service within 15 s"
        time.sleep(0.05)


def test_a_slow_service_leaves_health_and_login_answering_and_every_mint_ends_504(slow_site: Cluster) -> None:
    url = slow_site.urls[0]
    browser = logged_in(url)
    cookies, csrf = dict(browser.cookies), browser.cookies["csrftoken"]
    browser.close()

    # The clients exist before the load starts: building one costs this process tens of milliseconds
    # of CPU, which would show up as the site's latency.
    limits = httpx2.Limits(max_connections=CONCURRENT_MINTS)
    minting = httpx2.Client(base_url=url, cookies=cookies, timeout=TIMEOUT_SECONDS + 10, limits=limits)
    prober = httpx2.Client(base_url=url, timeout=5)
    for _ in range(20):  # warm: the workers have answered before the mints come
        prober.get("/healthz").raise_for_status()

    def mint(_: int) -> httpx2.Response:
        return minting.post("/api/sports-token", json={"reason": "unauthorized"}, headers={"X-CSRFToken": csrf})

    with ThreadPoolExecutor(CONCURRENT_MINTS) as pool:
        mints = [pool.submit(mint, number) for number in range(CONCURRENT_MINTS)]
        wait_until_the_service_holds(CONCURRENT_MINTS, slow_site.environment["SPORTS_BASE_URL"])
        answered_in = []
        for path in ("/healthz", "/accounts/login/") * 5:
            started = time.monotonic()
            assert prober.get(path).status_code == 200
            answered_in.append(time.monotonic() - started)
        assert not any(future.done() for future in mints)  # the probes ran while all 64 were waiting
        answers = [future.result() for future in mints]
    minting.close()
    prober.close()

    assert max(answered_in) < ANSWER_WITHIN_SECONDS, answered_in
    assert [answer.status_code for answer in answers] == [504] * CONCURRENT_MINTS
    assert all(answer.json()["error"] == "upstream_timeout" for answer in answers)
