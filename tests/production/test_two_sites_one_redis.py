"""Two sites of this project with different DJANGO_SECRET_KEYs on one Redis database share no count or
record: each process is gunicorn serving its own SQLite database (user pk 1 and pk 2 in both), both on a
redis-server of the test's own, minting from one counting stand-in service in "site" mode.

config/settings.py prefixes every cache key with a digest of the site's SECRET_KEY (Django's
KEY_PREFIX) unless DJANGO_CACHE_KEY_PREFIX says otherwise; everything the route, the login throttle
and the site's token write goes through Django's cache key function.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import redis

from tests.counting_service import CountingService
from tests.production.cluster import PROJECT_ROOT, a_fresh_minute_for, free_port
from tests.redis_server import RedisServer

PASSWORD = "two-sites-pass-123"


class OneSite:
    """One gunicorn process of the project, with a database of its own."""

    def __init__(self, database: Path, redis_url: str, service: CountingService, **overrides: str) -> None:
        self.secret_key = secrets.token_urlsafe(50)
        self.environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.production.site_mode_settings",  # token-header callers too
            "DJANGO_ENV_FILE": "",
            "DJANGO_DEBUG": "1",
            "DJANGO_SECRET_KEY": self.secret_key,
            "DATABASE_URL": f"sqlite:///{database}",
            "REDIS_URL": redis_url,
            "SPORTS_SANDBOX": "0",
            "SPORTS_BASE_URL": service.url,
            "SPORTS_API_KEY": "sk_test_" + secrets.token_urlsafe(32),
            "SPORTS_TOKEN_SHARING": "site",
            "SPORTS_TOKEN_RATE": "1/h",  # one answer per user, one flight per address: any shared count shows
            "DJANGO_LOG_LEVEL": "ERROR",
            **overrides,
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def setting(self, expression: str) -> str:
        """The value of `expression` (over `settings`) in this site's configuration."""
        code = f"import django; django.setup(); from django.conf import settings; print({expression})"
        completed = subprocess.run(  # noqa: S603 - fixed interpreter
            [sys.executable, "-c", code],
            cwd=PROJECT_ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return completed.stdout.strip()

    def start(self) -> None:
        port = free_port()
        command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=self.environment)  # noqa: S603
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.url} did not start within 30 s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def mint(self, username: str, reason: str | None = None) -> httpx2.Response:
        body = {"reason": reason} if reason else {}
        headers = {"Authorization": f"Device {username}"}
        return httpx2.post(f"{self.url}/api/sports-token", json=body, headers=headers, timeout=15)

    def failed_login(self) -> int:
        with httpx2.Client(base_url=self.url, timeout=10) as browser:
            form = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/accounts/login/").text)
            assert form is not None
            answer = browser.post(
                "/accounts/login/",
                data={"username": "alice", "password": "wrong", "csrfmiddlewaretoken": form.group(1)},
            )
            return answer.status_code


@pytest.fixture
def two_sites(tmp_path: Path, own_redis: RedisServer) -> Iterator[tuple[OneSite, OneSite]]:
    service = CountingService()
    template = tmp_path / "template.sqlite3"
    builder = OneSite(template, own_redis.url, service)
    for arguments in (
        ["migrate", "--no-input", "-v", "0"],
        [
            "shell",
            "-c",
            f"from django.contrib.auth.models import User; [User.objects.create_user(name, "
            f"password='{PASSWORD}') for name in ('alice', 'bob')]",
        ],
    ):
        subprocess.run(  # noqa: S603 - fixed interpreter and script
            [sys.executable, "manage.py", *arguments],
            cwd=PROJECT_ROOT,
            env=builder.environment,
            check=True,
            timeout=120,
        )
    sites = []
    for name in ("a", "b"):
        database = tmp_path / f"{name}.sqlite3"
        shutil.copy(template, database)  # alice is pk 1 and bob pk 2 in both
        sites.append(OneSite(database, own_redis.url, service))
    try:
        for site in sites:
            site.start()
        yield sites[0], sites[1]
    finally:
        for site in sites:
            site.stop()
        service.close()


def test_two_sites_on_one_redis_database_share_no_count_and_no_record(
    two_sites: tuple[OneSite, OneSite], own_redis: RedisServer
) -> None:
    a, b = two_sites
    # Site A spends alice's (pk 1) answer and its address's one flight, then its login throttle.
    first = a.mint("alice")
    assert first.status_code == 200, first.text
    assert (a.mint("alice").status_code, "user") == (429, "user")
    by_ip = a.mint("bob", reason="unauthorized")  # reaches the flight: the per-IP limit counts it
    assert by_ip.status_code == 429
    assert "client IP" in by_ip.json()["message"]
    a_fresh_minute_for("127.0.0.1")  # the eleven attempts in one window of the throttle
    assert [a.failed_login() for _ in range(11)] == [200] * 10 + [429]
    # Site B, same users, same address, same Redis database: nothing of A's counts.
    assert b.failed_login() == 200
    bob = b.mint("bob")  # B's first flight from this address
    assert bob.status_code == 200, bob.text
    alice = b.mint("alice")  # B's alice, pk 1 like A's
    assert alice.status_code == 200, alice.text
    assert alice.json()["token"] == bob.json()["token"] != first.json()["token"]  # each site its own token
    # Every key either site wrote starts with its own prefix, a digest that is not its secret key.
    prefixes = {
        a.setting("settings.CACHES['default']['KEY_PREFIX']"),
        b.setting("settings.CACHES['default']['KEY_PREFIX']"),
    }
    assert len(prefixes) == 2
    assert not any(site.secret_key in prefix or prefix in site.secret_key for site in two_sites for prefix in prefixes)
    keys = [key.decode() for key in redis.Redis.from_url(own_redis.url).keys("*")]
    assert keys
    assert {key.split(":", 1)[0] for key in keys} == prefixes, keys


def test_the_environment_chooses_the_prefix_an_existing_site_keeps(tmp_path: Path) -> None:
    service = CountingService()
    try:
        site = OneSite(tmp_path / "db.sqlite3", "redis://127.0.0.1:1/0", service)
        derived = site.setting("settings.CACHES['default']['KEY_PREFIX']")
        assert re.fullmatch(r"[0-9a-f]{16}", derived)
        site.environment["DJANGO_CACHE_KEY_PREFIX"] = "kept-across-key-rotation"
        assert site.setting("settings.CACHES['default']['KEY_PREFIX']") == "kept-across-key-rotation"
        site.environment["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
        site.environment.pop("DJANGO_CACHE_KEY_PREFIX")
        assert site.setting("settings.CACHES['default']['KEY_PREFIX']") != derived
    finally:
        service.close()
