"""`manage.py demo_setup`, run for real."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings

from sportsproxy.sandbox.models import Account, ApiKey
from tests.conftest import RpcCall


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().splitlines()


@pytest.fixture
def demo(settings: Any) -> None:
    settings.DEBUG = True  # the demo's own setting (pytest-django turns debug off)


def test_demo_setup_creates_user_account_key_and_env_file(demo: None, tmp_path: Path, rpc: RpcCall) -> None:
    env_file = tmp_path / ".env"
    output = run("demo_setup", "--env-file", str(env_file))
    assert authenticate(username="demo", password="demo-pass-123") is not None
    assert Account.objects.get(name="demo").tier == "growth"
    written = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    assert set(written) == {"SPORTS_API_KEY", "DJANGO_SECRET_KEY", "SPORTS_SANDBOX_SIGNING_KEY"}
    assert written["SPORTS_API_KEY"].startswith("sk_test_")
    assert rpc("auth", {}, credential=written["SPORTS_API_KEY"])["result"]["tier"] == "growth"
    assert not any(written["SPORTS_API_KEY"] in line for line in output)
    assert env_file.stat().st_mode & 0o777 == 0o600


def test_demo_setup_is_idempotent(demo: None, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    run("demo_setup", "--env-file", str(env_file))
    first = env_file.read_text()
    run("demo_setup", "--env-file", str(env_file))
    assert env_file.read_text() == first
    assert ApiKey.objects.count() == 1


def test_demo_setup_restores_a_configured_key_into_a_fresh_database(demo: None, rpc: RpcCall, tmp_path: Path) -> None:
    secret = "sk_test_" + "k" * 43
    with override_settings(SPORTS_API_KEY=secret):
        run("demo_setup", "--env-file", str(tmp_path / ".env"))
    assert "result" in rpc("auth", {}, credential=secret)
    assert "SPORTS_API_KEY" not in (tmp_path / ".env").read_text()


# --- Production (debug off): no demo user with the published password --------------------------


def test_in_production_demo_setup_requires_demo_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEMO_PASSWORD", raising=False)
    with pytest.raises(CommandError, match="DEMO_PASSWORD is not set") as refused:
        run("demo_setup", "--env-file", str(tmp_path / ".env"))
    assert "DJANGO_DEBUG is off" in str(refused.value)
    assert not User.objects.filter(username="demo").exists()


def test_in_production_the_published_password_is_refused_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_PASSWORD", "demo-pass-123")
    with pytest.raises(CommandError, match="DEMO_PASSWORD"):
        run("demo_setup", "--env-file", str(tmp_path / ".env"))
    assert not User.objects.filter(username="demo").exists()


def test_in_production_demo_password_sets_the_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_PASSWORD", "a-password-of-our-own-42")
    output = run("demo_setup", "--env-file", str(tmp_path / ".env"))
    assert authenticate(username="demo", password="a-password-of-our-own-42") is not None
    assert authenticate(username="demo", password="demo-pass-123") is None
    assert "a-password-of-our-own-42" not in "\n".join(output)


# --- .env: private from its first byte, replaced whole ------------------------------------------

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_watched: list[tuple[str, str, int]] = []  # (event, path, mode of a renamed file) while a test watches


def _record(event: str, args: tuple[Any, ...]) -> None:
    if not _watching:
        return
    if event == "open" and isinstance(args[0], (str, Path)):
        path, mode, flags = args
        if (mode and any(letter in mode for letter in "wax+")) or (flags or 0) & WRITE_FLAGS:
            _watched.append(("open for writing", str(path), 0))
    elif event == "os.rename":
        _watched.append(("rename", f"{args[0]} -> {args[1]}", os.stat(args[0]).st_mode & 0o777))


_watching = False
sys.addaudithook(_record)  # audit hooks cannot be removed; it records only inside `file_writes`


@pytest.fixture
def file_writes() -> Iterator[list[tuple[str, str, int]]]:
    """What the code under test opened for writing and renamed (with the renamed file's mode)."""
    global _watching
    _watched.clear()
    previous_umask = os.umask(0)  # nothing hides a world-readable create
    _watching = True
    try:
        yield _watched
    finally:
        _watching = False
        os.umask(previous_umask)


def test_env_file_is_never_written_in_place_and_arrives_private(
    demo: None, tmp_path: Path, file_writes: list[tuple[str, str, int]]
) -> None:
    env_file = tmp_path / ".env"
    run("demo_setup", "--env-file", str(env_file))
    assert ("open for writing", str(env_file), 0) not in file_writes  # only whole files are renamed onto it
    renames = [(what, mode) for event, what, mode in file_writes if event == "rename"]
    assert renames  # each secret arrived by rename
    assert all(what.endswith(f" -> {env_file}") and mode == 0o600 for what, mode in renames), renames
    assert env_file.stat().st_mode & 0o777 == 0o600
    assert [path.name for path in tmp_path.iterdir()] == [".env"]  # no temporary file left behind


def test_env_file_is_replaced_not_rewritten(demo: None, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("DJANGO_SECRET_KEY=kept\n")
    env_file.chmod(0o644)
    with env_file.open() as before:
        run("demo_setup", "--env-file", str(env_file))
        assert before.read() == "DJANGO_SECRET_KEY=kept\n"  # a reader holding the old file saw no change
        assert os.fstat(before.fileno()).st_ino != env_file.stat().st_ino  # a new file took the name
    assert env_file.read_text().startswith("DJANGO_SECRET_KEY=kept\n")
    assert env_file.stat().st_mode & 0o777 == 0o600


def test_demo_setup_in_a_site_that_does_not_mount_the_sandbox_makes_the_user_and_no_sandbox_key(
    tmp_path: Path,
) -> None:
    """With SPORTS_BASE_URL set the sandbox is not installed (config/settings.py): no account, no key."""
    env_file = tmp_path / ".env"
    environment = {
        **os.environ,
        "DJANGO_ENV_FILE": str(env_file),
        "DJANGO_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'site.sqlite3'}",
        "SPORTS_SANDBOX": "",
        "SPORTS_BASE_URL": "https://api.sports.example",
        "SPORTS_API_KEY": "sk_test_" + "k" * 40,
    }
    root = Path(__file__).resolve().parents[3]
    for command in (["migrate", "--no-input"], ["demo_setup"]):
        completed = subprocess.run(  # noqa: S603 - this interpreter and the project's manage.py
            [sys.executable, "manage.py", *command],
            cwd=root,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
    assert "Created user 'demo'" in completed.stdout
    assert "sandbox" not in completed.stdout.lower()
    assert set(dict(line.split("=", 1) for line in env_file.read_text().splitlines())) == {"DJANGO_SECRET_KEY"}
