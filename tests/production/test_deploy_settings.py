"""Production settings: `check --deploy` is clean when the production variables are set."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

from tests.production.cluster import PROJECT_ROOT, REDIS_URL

PRODUCTION = {
    "DJANGO_ENV_FILE": "",
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "sports.example.com",
    "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_urlsafe(48),
    "SPORTS_API_KEY": "sk_live_" + secrets.token_urlsafe(32),
    "REDIS_URL": REDIS_URL,  # the tests' Redis (tests/stores.py), read by no check: only its backend matters (E006)
}


def manage(*arguments: str, **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed interpreter and script
        [sys.executable, "manage.py", *arguments],
        cwd=PROJECT_ROOT,
        env={**os.environ, **PRODUCTION, **environment},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_is_clean_with_the_production_variables() -> None:
    completed = manage("check", "--deploy", "--fail-level", "WARNING")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "System check identified no issues (0 silenced)." in completed.stdout


def test_check_deploy_warns_when_debug_is_left_on() -> None:
    completed = manage("check", "--deploy", "--fail-level", "WARNING", DJANGO_DEBUG="1")
    assert completed.returncode != 0
    assert "security.W018" in completed.stderr


def test_production_refuses_to_start_without_a_secret_key() -> None:
    completed = manage("check", DJANGO_SECRET_KEY="")
    assert completed.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in completed.stderr


def test_production_logs_are_json_lines() -> None:
    completed = manage("shell", "-c", "import logging; logging.getLogger('probe').warning('hello %s', 'world')")
    line = completed.stderr.strip().splitlines()[-1]
    import json

    record = json.loads(line)
    assert record["message"] == "hello world"
    assert record["level"] == "WARNING"
    assert record["logger"] == "probe"


def test_check_deploy_fails_without_a_shared_cache() -> None:
    completed = manage("check", "--deploy", "--fail-level", "ERROR", REDIS_URL="")
    assert completed.returncode != 0
    assert "(mintroute.E006)" in completed.stderr
