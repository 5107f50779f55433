"""SPORTS_TOKEN_SHARING with real components: two processes of the site (gunicorn's WSGI and uvicorn's
ASGI, so both entries of the route) sharing one Redis and one database, a counting stand-in service on a
socket (tests/counting_service.py), and concurrent callers.

Callers authenticate with a token header (tests/mintroute/device_auth.py) and each comes from its own
address (X-Forwarded-For behind one trusted proxy), so twenty users are twenty users to the rate limits.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest
import redis

from mintroute.sharing import LEASE_SECONDS, flight_seconds
from tests.counting_service import CountingService
from tests.production.cluster import PROJECT_ROOT, free_port, logged_in, shared_redis_url

REDIS_URL = shared_redis_url("site-mode")  # a database of its own, flushed before each test
USERS = 24
PASSWORD = "site-mode-pass-123"
TIMEOUT = 1  # SPORTS_TIMEOUT of the processes: a hanging service costs each mint 1 s


class Site:
    """Two processes of the project serving one site."""

    def __init__(self, mode: str, database: Path, service: CountingService) -> None:
        self.service = service
        self.environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.production.site_mode_settings",
            "DJANGO_ENV_FILE": "",
            "DJANGO_DEBUG": "1",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DATABASE_URL": f"sqlite:///{database}",
            "REDIS_URL": REDIS_URL,
            "SPORTS_SANDBOX": "0",
            "SPORTS_BASE_URL": service.url,
            "SPORTS_API_KEY": "sk_test_" + secrets.token_urlsafe(32),
            "SPORTS_TOKEN_SHARING": mode,
            "SPORTS_TOKEN_RATE": "5/h",  # an hour-long window: no test straddles two
            "SPORTS_TRUSTED_PROXY_COUNT": "1",
            "SPORTS_TIMEOUT": str(TIMEOUT),
            "DJANGO_LOG_LEVEL": "ERROR",
        }
        self.processes: list[subprocess.Popen[bytes]] = []
        self.urls: list[str] = []

    def manage(self, *arguments: str) -> None:
        subprocess.run(  # noqa: S603 - fixed interpreter and script
            [sys.executable, "manage.py", *arguments], cwd=PROJECT_ROOT, env=self.environment, check=True, timeout=120
        )

    def start(self) -> None:
        wsgi, asgi = free_port(), free_port()
        commands = [
            ["-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{wsgi}", "--threads", "32"],
            ["-m", "uvicorn", "config.asgi:application", "--port", str(asgi), "--log-level", "warning"],
        ]
        for command, port in zip(commands, (wsgi, asgi), strict=True):
            process = subprocess.Popen(  # noqa: S603 - fixed interpreter and modules
                [sys.executable, *command], cwd=PROJECT_ROOT, env=self.environment, start_new_session=True
            )
            self.processes.append(process)
            self.urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        for url in self.urls:
            while True:
                try:
                    if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{url} did not start within 30 s")
                time.sleep(0.2)

    def kill(self, node: int) -> None:
        """SIGKILL a process and its workers at once, as an OOM killer or a lost machine would."""
        os.killpg(self.processes[node].pid, signal.SIGKILL)
        self.processes[node].wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def mint(
        self,
        user: int,
        *,
        node: int = 0,
        reason: str | None = None,
        client: httpx2.Client | None = None,
        timeout: float = 15,
    ) -> httpx2.Response:
        """User `user`'s call (token header, its own address) to process `node`."""
        headers = {"Authorization": f"Device user{user}", "X-Forwarded-For": f"198.51.100.{user}"}
        body = {"reason": reason} if reason else {}
        caller = client or httpx2
        return caller.post(f"{self.urls[node % 2]}/api/sports-token", json=body, headers=headers, timeout=timeout)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite database with the users, for every site of this module."""
    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    path = tmp_path_factory.mktemp("site-mode") / "db.sqlite3"
    setup = Site("login", path, CountingService())
    setup.manage("migrate", "--no-input", "-v", "0")
    users = "; ".join(
        [f"User.objects.create_user('user{n}', password='{PASSWORD}')" for n in range(USERS)]
        + ["User.objects.create_user('inactive', is_active=False)"]
    )
    setup.manage("shell", "-c", f"from django.contrib.auth.models import User; {users}")
    return path


def running_site(mode: str, database: Path) -> Iterator[Site]:
    service = CountingService()
    site = Site(mode, database, service)
    try:
        site.start()
        yield site
    finally:
        site.stop()
        service.close()
        redis.Redis.from_url(REDIS_URL).flushdb()


@pytest.fixture(scope="module")
def shared_site(database: Path) -> Iterator[Site]:
    yield from running_site("site", database)


@pytest.fixture(scope="module")
def login_site(database: Path) -> Iterator[Site]:
    yield from running_site("login", database)


@pytest.fixture(params=["login", "site"])
def any_site(request: pytest.FixtureRequest) -> Site:
    site: Site = request.getfixturevalue("shared_site" if request.param == "site" else "login_site")
    return site


@pytest.fixture(autouse=True)
def fresh_state() -> None:
    """No site token, no lock, no rate-limit count left by the previous test."""
    redis.Redis.from_url(REDIS_URL).flushdb()


def at_once(site: Site, users: range, reason: str | None = None) -> list[httpx2.Response]:
    """Every user of `users` calls at the same moment, alternately through each process."""
    barrier = threading.Barrier(len(users))
    answers: dict[int, httpx2.Response] = {}

    def call(user: int) -> None:
        barrier.wait(timeout=10)
        answers[user] = site.mint(user, node=user, reason=reason)

    threads = [threading.Thread(target=call, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return [answers[user] for user in users]


def test_twenty_users_minting_at_once_through_two_processes_cost_one_mint(shared_site: Site) -> None:
    shared_site.service.reset()
    shared_site.service.delay = 0.5  # the mint is in flight while the others arrive
    try:
        answers = at_once(shared_site, range(20))
    finally:
        shared_site.service.delay = 0
    assert [answer.status_code for answer in answers] == [200] * 20, [answer.text for answer in answers]
    assert len({answer.json()["token"] for answer in answers}) == 1
    assert shared_site.service.requests == 1
    assert shared_site.service.mints == 1


def test_the_same_twenty_users_in_login_mode_cost_twenty(login_site: Site) -> None:
    login_site.service.reset()
    answers = at_once(login_site, range(20))
    assert [answer.status_code for answer in answers] == [200] * 20
    assert login_site.service.mints == 20


def test_an_unauthorized_flood_costs_at_most_one_mint_per_ten_seconds(shared_site: Site) -> None:
    service = shared_site.service
    service.reset()
    first = shared_site.mint(0).json()["token"]
    flood = at_once(shared_site, range(20), reason="unauthorized")
    replaced = time.monotonic()
    assert [answer.status_code for answer in flood] == [200] * 20
    replacements = {answer.json()["token"] for answer in flood}
    assert len(replacements) == 1
    assert first not in replacements
    assert service.mints == 2
    again = at_once(shared_site, range(20), reason="unauthorized")
    assert {answer.json()["token"] for answer in again} == replacements
    assert service.mints == 2
    time.sleep(max(0.0, replaced + 10.5 - time.monotonic()))
    later = at_once(shared_site, range(20), reason="unauthorized")
    assert len({answer.json()["token"] for answer in later}) == 1
    assert service.mints == 3


def test_every_rule_still_refuses_what_it_refused(shared_site: Site) -> None:
    service = shared_site.service
    service.reset()
    for node, url in enumerate(shared_site.urls):
        anonymous = httpx2.post(f"{url}/api/sports-token", json={}, headers={"X-Forwarded-For": "198.51.100.201"})
        assert (anonymous.status_code, anonymous.json()["error"]) == (401, "not_authenticated")
        stranger = httpx2.post(f"{url}/api/sports-token", json={}, headers={"Authorization": "Device nobody"})
        assert (stranger.status_code, stranger.json()["error"]) == (401, "not_authenticated")
        inactive = httpx2.post(f"{url}/api/sports-token", json={}, headers={"Authorization": "Device inactive"})
        assert inactive.status_code in (401, 403)  # Django's ModelBackend does not authenticate inactive users
        wrong_body = shared_site.mint(1, node=node, reason="bogus")
        assert (wrong_body.status_code, wrong_body.json()["error"]) == (400, "bad_request")
        browser = logged_in(url, f"user{2 + node}", PASSWORD, headers={"X-Forwarded-For": "198.51.100.200"})
        try:
            no_csrf = browser.post("/api/sports-token", json={}, headers={"X-Forwarded-For": "198.51.100.202"})
            assert (no_csrf.status_code, no_csrf.json()["error"]) == (403, "csrf_failed")
            with_csrf = browser.post(
                "/api/sports-token",
                json={},
                headers={"X-CSRFToken": browser.cookies["csrftoken"], "X-Forwarded-For": "198.51.100.203"},
            )
            assert with_csrf.status_code == 200
        finally:
            browser.close()
    assert service.requests == 1  # the one admitted call; no refusal reached the service
    statuses = [shared_site.mint(4, node=turn).status_code for turn in range(6)]
    assert statuses == [200] * 5 + [429]  # 5/h for this user across both processes
    assert service.requests == 1  # all five answered with the site's token


# kind -> the route's status and error code when nothing can be ridden through
FAILURES = {
    "down": (503, "upstream_unavailable"),
    "hanging": (504, "upstream_timeout"),
    "rate_limited": (503, "upstream_rate_limited"),
    "garbage": (502, "upstream_error"),
}


@pytest.mark.parametrize("kind", FAILURES)
def test_an_outage_is_ridden_through_with_more_than_a_minute_left(any_site: Site, kind: str) -> None:
    service = any_site.service
    user = 10 + list(FAILURES).index(kind)
    with httpx2.Client() as jar:  # a browser's cookie jar (the login's token in "login" mode)
        service.reset()
        service.switch("ok", lifetime=100)  # born past half-life: every call mints again
        held = any_site.mint(user, node=0, client=jar).json()
        service.switch(kind)
        riding = any_site.mint(user, node=1, client=jar)
        assert riding.status_code == 200, riding.text
        assert riding.json() == held  # the token and its true expiresAt
        unauthorized = any_site.mint(user, node=0, client=jar, reason="unauthorized")
        assert (unauthorized.status_code, unauthorized.json()["error"]) == FAILURES[kind]
        forget_the_site_token()  # it only moves forward: a token that expires sooner would never replace it
        service.switch("ok", lifetime=50)
        assert any_site.mint(user, node=1, client=jar).status_code == 200
        service.switch(kind)
        refused = any_site.mint(user, node=0, client=jar)
        assert (refused.status_code, refused.json()["error"]) == FAILURES[kind]


def forget_the_site_token() -> None:
    """Drop the site's token ("site" mode), as a fresh site has none."""
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.keys("*mintroute:site-token:*"):
        client.delete(key)
    client.close()


def test_never_after_upstream_unauthorized(any_site: Site) -> None:
    service = any_site.service
    with httpx2.Client() as jar:
        service.reset()
        service.switch("ok", lifetime=100)
        assert any_site.mint(20, client=jar).status_code == 200
        service.switch("unauthorized")
        for node in (0, 1):
            refused = any_site.mint(20, node=node, client=jar)
            assert (refused.status_code, refused.json()["error"]) == (502, "upstream_unauthorized")


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds} s")
        time.sleep(0.02)


def holding_the_lock() -> bool:
    return bool(redis.Redis.from_url(REDIS_URL).keys("*site-token*:lock"))


def gunicorn_workers(site: Site) -> list[int]:
    """The pids of node 0's gunicorn workers (children of its master)."""
    children = Path(f"/proc/{site.processes[0].pid}/task").glob("*/children")
    return [int(pid) for child in children for pid in child.read_text().split()]


MINT_SECONDS = 0.8  # the stand-in's delay: under SPORTS_TIMEOUT, so every mint succeeds


@pytest.mark.parametrize("node", [0, 1], ids=["gunicorn-wsgi", "uvicorn-asgi"])
def test_a_caller_that_leaves_mid_mint_costs_the_others_nothing(shared_site: Site, node: int) -> None:
    """A caller closes its connection while its request holds the single flight: the next caller, at
    the other process, is answered within the mint's own time with the flight's token (under ASGI
    the lock stayed held for its full life before: ~24 s here)."""
    service = shared_site.service
    service.reset()
    service.delay = MINT_SECONDS
    try:
        host, port = shared_site.urls[node].removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as connection:
            connection.sendall(
                b"POST /api/sports-token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Authorization: Device user0\r\nX-Forwarded-For: 198.51.100.100\r\nContent-Length: 2\r\n\r\n{}"
            )
            wait_for(lambda: service.requests == 1, "the leaving caller's mint reached the service")
        started = time.monotonic()
        answer = shared_site.mint(1, node=node + 1, timeout=10)
        waited = time.monotonic() - started
    finally:
        service.delay = 0
    assert answer.status_code == 200, answer.text
    assert waited < MINT_SECONDS + 1.5, waited
    assert service.mints == 1  # the flight completed for the others
    wait_for(lambda: not holding_the_lock(), "the lock was released", seconds=2)


def test_a_worker_killed_mid_mint_delays_the_others_at_most_its_lease(database: Path) -> None:
    """A gunicorn worker SIGKILLed while it holds the lock stops renewing its lease: the other callers,
    at either process, mint within about LEASE_SECONDS, not the longest mint's time (24 s with
    SPORTS_TIMEOUT 1, what the lock lived before)."""
    assert flight_seconds(TIMEOUT) > 20  # what a lock that lived as long as the longest mint would cost
    service = CountingService()
    site = Site("site", database, service)
    try:
        site.start()
        service.switch("hanging")
        holder = threading.Thread(target=lambda: _quietly(lambda: site.mint(0, node=0)), daemon=True)
        holder.start()
        wait_for(holding_the_lock, "the gunicorn worker took the lock")
        (worker,) = gunicorn_workers(site)
        os.kill(worker, signal.SIGKILL)  # mid-mint, holding the lock; its master starts another worker
        killed = time.monotonic()
        service.switch("ok")
        answers: dict[int, tuple[int, float]] = {}

        def call(user: int) -> None:
            answer = site.mint(user, node=user, timeout=30)
            answers[user] = (answer.status_code, time.monotonic() - killed)

        callers = [threading.Thread(target=call, args=(user,)) for user in range(1, 7)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(timeout=40)
        assert [status for status, _ in answers.values()] == [200] * 6, answers
        slowest = max(waited for _, waited in answers.values())
        assert slowest < 8, f"the others waited {slowest:.1f} s for a dead worker's lock (lease {LEASE_SECONDS} s)"
        assert service.mints == 1
    finally:
        site.stop()
        service.close()
        redis.Redis.from_url(REDIS_URL).flushdb()


def _quietly(call: Callable[[], object]) -> None:
    """Run `call`, ignoring the broken connection of a process killed under it."""
    with contextlib.suppress(httpx2.HTTPError):
        call()


def stored_site_token() -> dict[str, object]:
    """The site's token as the shared cache holds it (Django pickles what it stores)."""
    client = redis.Redis.from_url(REDIS_URL)
    (key,) = [key for key in client.keys("*mintroute:site-token:*") if not key.endswith((b":lock", b":order"))]
    value = client.get(key)
    assert value is not None
    stored: dict[str, object] = pickle.loads(value)  # noqa: S301 - what this test's own site wrote
    return stored


def test_a_holder_paused_past_its_lease_never_overwrites_a_newer_token(database: Path) -> None:
    """A gunicorn worker stopped (SIGSTOP) mid-mint, holding the lock, past its lease: another flight mints
    and stores a later token; the resumed holder, its older token in hand, leaves the newer one in place,
    and what it answers has more than half its life. mintedAt is when the service answered, not when stored."""
    service = CountingService(delay=0.4)  # under SPORTS_TIMEOUT: the paused mint still succeeds
    site = Site("site", database, service)
    try:
        site.start()
        held: list[httpx2.Response] = []
        holder = threading.Thread(target=lambda: held.append(site.mint(0, node=0, timeout=40)), daemon=True)
        holder.start()
        wait_for(lambda: service.requests == 1, "the holder's mint reached the service")
        (worker,) = gunicorn_workers(site)
        os.kill(worker, signal.SIGSTOP)
        try:
            time.sleep(LEASE_SECONDS + 2)  # the lease, unrenewed, expires
            service.delay = 0
            newer = site.mint(1, node=1, timeout=20)
            assert newer.status_code == 200, newer.text
        finally:
            os.kill(worker, signal.SIGCONT)
        holder.join(timeout=30)
        assert [answer.status_code for answer in held] == [200]
        assert service.mints == 2
        stored = stored_site_token()
        assert stored["token"] == newer.json()["token"]  # not the resumed holder's older one
        minted_at = datetime.fromisoformat(str(stored["mintedAt"]))  # when the service answered the newer mint
        service_minted = datetime.fromisoformat(str(stored["expiresAt"])) - timedelta(seconds=int(stored["ttl"]))
        assert timedelta(0) <= minted_at - service_minted < timedelta(seconds=2)  # its expiresAt: whole seconds
        left = datetime.fromisoformat(held[0].json()["expiresAt"]) - datetime.now(UTC)
        assert left > timedelta(seconds=int(stored["ttl"]) / 2)
    finally:
        site.stop()
        service.close()
        redis.Redis.from_url(REDIS_URL).flushdb()
