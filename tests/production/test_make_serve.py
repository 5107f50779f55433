"""`make serve` in production (DJANGO_DEBUG off): it refuses to start on a deploy check's error,
with the id and the sentence that says how to fix it, and starts and serves with a correct
environment (PostgreSQL, Redis), its sandbox socket refusing frames over 65,536 bytes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import psycopg
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.production.cluster import POSTGRES, PROJECT_ROOT, REDIS_URL, Cluster, free_port, require_engines
from tests.support import envelope

PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    # Plain HTTP on the test machine (behind the TLS proxy these stay on).
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DJANGO_SECURE_COOKIES": "0",
}
REFUSED_WITHIN_SECONDS = 60  # a refusal exits at once; a start that was not refused never exits
MAX_FRAME_BYTES = 65_536


def production_environment(**overrides: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_ENV_FILE": "",
        **PRODUCTION,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_urlsafe(48),
        "DATABASE_URL": f"{POSTGRES}/test",
        "REDIS_URL": REDIS_URL,
        "SPORTS_BASE_URL": "",
        "SPORTS_SANDBOX": "1",
        "SPORTS_API_KEY": "sk_test_" + secrets.token_urlsafe(32),
        "HOST": f"127.0.0.1:{free_port()}",
        "SPORTS_SANDBOX_WS_HOST": f"127.0.0.1:{free_port()}",
        "WEB_CONCURRENCY": "1",
        **overrides,
    }


def serve_expecting_refusal(
    command: list[str], environment: dict[str, str], cwd: Path = PROJECT_ROOT
) -> tuple[int, str]:
    """Run the launcher; (exit code, stdout + stderr). A launcher that serves instead is stopped."""
    launcher = subprocess.Popen(  # noqa: S603 - fixed command
        command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        output, _ = launcher.communicate(timeout=REFUSED_WITHIN_SECONDS)
    except subprocess.TimeoutExpired:
        launcher.send_signal(signal.SIGTERM)  # config.serve stops its servers
        launcher.communicate(timeout=30)
        pytest.fail(f"make serve started instead of refusing (it served for {REFUSED_WITHIN_SECONDS} s)")
    return launcher.returncode, output


@pytest.fixture(scope="module", autouse=True)
def _engines() -> None:
    require_engines()


REFUSALS = {
    "no Redis": ({"REDIS_URL": ""}, "mintroute.E006", "REDIS_URL"),
    "short secret": ({"DJANGO_SECRET_KEY": "x"}, "mintroute.E007", "DJANGO_SECRET_KEY"),
    "secret of 4 characters": ({"DJANGO_SECRET_KEY": "abcd" * 20}, "mintroute.E007", "DJANGO_SECRET_KEY"),
    "secret abcde x 10": ({"DJANGO_SECRET_KEY": "abcde" * 10}, "mintroute.E007", "DJANGO_SECRET_KEY"),
    "startproject's secret": (
        {"DJANGO_SECRET_KEY": "django-insecure-" + secrets.token_hex(32)},
        "mintroute.E007",
        "DJANGO_SECRET_KEY",
    ),
    "signing key = secret": (
        {"DJANGO_SECRET_KEY": "s3cret-" + "k" * 60, "SPORTS_SANDBOX_SIGNING_KEY": "s3cret-" + "k" * 60},
        "sandbox.E001",
        "SPORTS_SANDBOX_SIGNING_KEY",
    ),
    "signing key a x 32": ({"SPORTS_SANDBOX_SIGNING_KEY": "a" * 32}, "sandbox.E002", "SPORTS_SANDBOX_SIGNING_KEY"),
    "signing key 'short'": ({"SPORTS_SANDBOX_SIGNING_KEY": "short"}, "sandbox.E002", "SPORTS_SANDBOX_SIGNING_KEY"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_make_serve_refuses_to_start(case: str) -> None:
    overrides, check_id, variable = REFUSALS[case]
    environment = production_environment(**overrides)
    code, output = serve_expecting_refusal([sys.executable, "-m", "config.serve"], environment)
    assert code != 0
    assert f"({check_id})" in output
    assert variable in output  # the sentence says what to set
    assert "make serve refuses to start" in output
    assert "Traceback" not in output
    if len(environment["DJANGO_SECRET_KEY"]) > 8:  # a longer secret would be recognisable in the output
        assert environment["DJANGO_SECRET_KEY"] not in output


def test_the_makefile_target_refuses_before_it_migrates() -> None:
    database = f"sports_serve_{secrets.token_hex(4)}"  # a fresh, empty production database
    with psycopg.connect(f"{POSTGRES}/test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    try:
        environment = production_environment(REDIS_URL="", DATABASE_URL=f"{POSTGRES}/{database}")
        code, output = serve_expecting_refusal(["make", "--no-print-directory", "serve"], environment)
        with psycopg.connect(f"{POSTGRES}/{database}") as connection:
            row = connection.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
            tables = row.fetchone()
    finally:
        with psycopg.connect(f"{POSTGRES}/test", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    assert code != 0
    assert "(mintroute.E006)" in output
    assert "make serve refuses to start" in output
    assert tables == (0,)  # refused before `migrate` wrote anything


def check_deploy(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`manage.py check --deploy` as make serve runs it, in its own process."""
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_random_hexadecimal_secrets_and_a_test_key_pass_the_deploy_checks() -> None:
    environment = production_environment(
        DJANGO_SECRET_KEY=secrets.token_hex(32), SPORTS_SANDBOX_SIGNING_KEY=secrets.token_hex(32)
    )
    completed = check_deploy(environment)
    assert completed.returncode == 0, completed.stderr
    assert "sportsproxy.W002" in completed.stderr  # the sk_test_ key: a warning, never a refusal


def test_a_single_process_site_may_waive_e006() -> None:
    environment = production_environment(REDIS_URL="", DJANGO_SILENCED_SYSTEM_CHECKS="mintroute.E006")
    completed = check_deploy(environment)
    assert completed.returncode == 0, completed.stderr
    assert "mintroute.E006" not in completed.stdout + completed.stderr


# --- a checkout where `make demo` ran ----------------------------------------------------------

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


@pytest.fixture(scope="module")
def production_node() -> Iterator[Cluster]:
    """One node of `make serve` with a correct production environment: debug off, PostgreSQL, Redis."""
    node = Cluster(**PRODUCTION)
    try:
        # As `make serve` does before it serves; without it the login page found staticfiles/ only when
        # another module had collected it first (a clean clone, another order: a 500).
        node.manage("collectstatic", "--no-input", "--verbosity", "0")
        node.start(events_in=(False,))
        yield node
    finally:
        node.stop()


def test_with_a_correct_production_environment_it_serves(production_node: Cluster) -> None:
    assert production_node.environment["DJANGO_DEBUG"] == "0"
    answer = httpx2.get(f"{production_node.urls[0]}/healthz", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    login = httpx2.get(f"{production_node.urls[0]}/accounts/login/", timeout=10)
    assert login.status_code == 200
    assert "demo-pass-123" not in login.text  # production shows no demo hint


async def first_answer(url: str, frame: str) -> dict[str, object] | int | None:
    """The socket's answer to `frame`, or the close code it was refused with (None: no close frame)."""
    async with connect(url, max_size=None) as socket:
        try:
            await socket.send(frame)  # a big one is refused while it is still being sent
            answer: dict[str, object] = json.loads(await asyncio.wait_for(socket.recv(), 10))
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else None
        return answer


def padded_auth(key: str, size: int) -> str:
    frame = json.dumps(envelope("auth", {"apiKey": key}))
    return frame[:-1] + " " * (size - len(frame)) + "}"


def test_a_frame_over_65536_bytes_is_closed_with_1009_before_auth(production_node: Cluster) -> None:
    url = production_node.ws_urls[0]
    at_the_cap = padded_auth(production_node.site_key, MAX_FRAME_BYTES)
    over_the_cap = padded_auth(production_node.site_key, MAX_FRAME_BYTES + 1)
    assert len(at_the_cap.encode()) == MAX_FRAME_BYTES

    accepted = asyncio.run(first_answer(url, at_the_cap))
    assert isinstance(accepted, dict), accepted
    assert "result" in accepted, accepted  # read, parsed and authenticated
    assert asyncio.run(first_answer(url, over_the_cap)) == 1009
    assert asyncio.run(first_answer(url, "x" * (16 * 1024 * 1024))) == 1009  # the 16 MiB frame
