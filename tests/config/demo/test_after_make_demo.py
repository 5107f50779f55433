"""A checkout where `make demo` ran: its database and `.env` are private, and `make serve` there refuses
to start on the demo user (config.E001) until the user's password is changed."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.production.cluster import PROJECT_ROOT, REDIS_URL, free_port
from tests.production.test_make_serve import PRODUCTION, run_in, serve_expecting_refusal

CHECKOUT_LEFTOVERS = (".git", ".venv", ".nox", "node_modules", "staticfiles", "__pycache__", "*.sqlite3", ".env")


def clean_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without any of the project's settings (the checkout's .env supplies them)."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "SPORTS_", "DEMO_")) and name not in ("DATABASE_URL", "REDIS_URL")
    }
    return {**kept, **overrides}


@pytest.fixture(scope="module")
def demo_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this project in which `make demo`'s steps ran: migrate and demo_setup (debug on), leaving
    its .env (the secrets and the sandbox key) and its SQLite database with the `demo` user."""
    checkout = tmp_path_factory.mktemp("demo-ran") / "project"
    shutil.copytree(PROJECT_ROOT, checkout, ignore=shutil.ignore_patterns(*CHECKOUT_LEFTOVERS))
    for step in (["migrate", "--no-input"], ["demo_setup"]):
        run_in(checkout, [sys.executable, "manage.py", *step], clean_environment())
    return checkout


def test_after_make_demo_the_database_and_env_are_private(demo_checkout: Path) -> None:
    assert (demo_checkout / "db.sqlite3").stat().st_mode & 0o777 == 0o600
    assert (demo_checkout / ".env").stat().st_mode & 0o777 == 0o600


def production_secrets() -> dict[str, str]:
    """What production sets in its environment, since it reads no .env."""
    return {"DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_urlsafe(48)}


def test_after_make_demo_make_serve_refuses_the_demo_user(demo_checkout: Path) -> None:
    production = clean_environment(
        **PRODUCTION,
        **production_secrets(),
        REDIS_URL=REDIS_URL,
        HOST=f"127.0.0.1:{free_port()}",
        WEB_CONCURRENCY="1",
    )
    code, output = serve_expecting_refusal([sys.executable, "-m", "config.serve"], production, cwd=demo_checkout)
    assert code != 0
    assert "make serve refuses to start" in output
    assert re.findall(r"\((\w+\.E\d+)\)", output) == ["config.E001"]  # the only error: the demo user
    assert "'demo'" in output
    assert "changepassword demo" in output  # how to fix it: another password, or remove the user
    assert ".delete()" in output
    assert "Traceback" not in output

    fixed = "from django.contrib.auth.models import User; u = User.objects.get(username='demo'); "
    fixed += f"u.set_password('{secrets.token_hex(16)}'); u.save()"
    run_in(demo_checkout, [sys.executable, "manage.py", "shell", "-c", fixed], production)
    run_in(demo_checkout, [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"], production)


def dotenv_values(path: Path) -> dict[str, str]:
    lines = (line.partition("=") for line in path.read_text().splitlines() if "=" in line)
    return {name.strip(): value.strip() for name, _, value in lines}


def test_after_make_demo_check_deploy_with_debug_off_and_no_secret_reports_it(demo_checkout: Path) -> None:
    """The issue's case: `DJANGO_DEBUG=0 manage.py check --deploy` without DJANGO_SECRET_KEY, in the
    checkout whose .env holds the demo's secret: production reads no .env, so the secret is missing."""
    assert "DJANGO_SECRET_KEY" in dotenv_values(demo_checkout / ".env")
    completed = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"],
        cwd=demo_checkout,
        env=clean_environment(**PRODUCTION, REDIS_URL=REDIS_URL),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in completed.stderr
    assert dotenv_values(demo_checkout / ".env")["DJANGO_SECRET_KEY"] not in completed.stdout + completed.stderr


def test_after_make_demo_make_serve_reads_no_env_file(demo_checkout: Path) -> None:
    """`make serve` (DJANGO_DEBUG unset: production) with the demo's .env beside it and no secret in the
    environment refuses to start: the demo's secret never fills production's."""
    production = clean_environment(
        **{name: value for name, value in PRODUCTION.items() if name != "DJANGO_DEBUG"},
        REDIS_URL=REDIS_URL,
        HOST=f"127.0.0.1:{free_port()}",
        WEB_CONCURRENCY="1",
        DJANGO_ENV_FILE=str(demo_checkout / ".env"),  # the real target, in this checkout, reading that file
    )
    code, output = serve_expecting_refusal(["make", "--no-print-directory", "serve"], production)
    assert code != 0
    assert "make serve refuses to start: DJANGO_SECRET_KEY is not set" in output
    assert "Traceback" not in output


def test_with_debug_on_the_env_file_is_read_as_before(demo_checkout: Path) -> None:
    key = dotenv_values(demo_checkout / ".env")["SPORTS_API_KEY"]
    show = "from django.conf import settings; print(settings.DEBUG, settings.SPORTS_API_KEY)"
    for debug in ({}, {"DJANGO_DEBUG": "1"}):
        output = run_in(demo_checkout, [sys.executable, "manage.py", "shell", "-c", show], clean_environment(**debug))
        assert output.split()[-2:] == ["True", key]
