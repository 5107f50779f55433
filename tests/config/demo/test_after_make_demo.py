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
from tests.production.test_make_serve import PRODUCTION, serve_expecting_refusal

CHECKOUT_LEFTOVERS = (".git", ".venv", ".nox", "node_modules", "staticfiles", "__pycache__", "*.sqlite3", ".env")


def clean_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without any of the project's settings (the checkout's .env supplies them)."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "SPORTS_", "DEMO_")) and name not in ("DATABASE_URL", "REDIS_URL")
    }
    return {**kept, **overrides}


def run_in(checkout: Path, command: list[str], environment: dict[str, str]) -> str:
    completed = subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
        command, cwd=checkout, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout + completed.stderr


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


def test_after_make_demo_make_serve_refuses_the_demo_user(demo_checkout: Path) -> None:
    production = clean_environment(
        **PRODUCTION, REDIS_URL=REDIS_URL, HOST=f"127.0.0.1:{free_port()}", WEB_CONCURRENCY="1"
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
