"""config/sqlite3: the SQLite database `migrate` creates is mode 0600 from its first byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.sqlite3.base import make_private

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def test_migrate_creates_the_file_a_sqlite_database_url_names_with_mode_0600(tmp_path: Path) -> None:
    database = tmp_path / "site.sqlite3"
    environment = {**os.environ, "DJANGO_ENV_FILE": "", "DATABASE_URL": f"sqlite:///{database}"}
    completed = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert database.stat().st_size > 0  # the tables are in it
    assert database.stat().st_mode & 0o777 == 0o600


def test_the_file_is_created_empty_and_private_before_sqlite_opens_it(tmp_path: Path) -> None:
    database = tmp_path / "new.sqlite3"
    old_umask = os.umask(0)  # the most permissive umask: the mode comes from the code, not the umask
    try:
        make_private({"database": str(database)})
    finally:
        os.umask(old_umask)
    assert (database.stat().st_size, database.stat().st_mode & 0o777) == (0, 0o600)


def test_an_existing_file_readable_by_others_is_made_private_and_keeps_its_data(tmp_path: Path) -> None:
    existing = tmp_path / "old-checkout.sqlite3"
    existing.write_bytes(b"data")
    existing.chmod(0o644)  # as SQLite created it before this backend
    make_private({"database": str(existing)})
    assert (existing.read_bytes(), existing.stat().st_mode & 0o777) == (b"data", 0o600)


def test_memory_databases_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in (":memory:", "file:memorydb?mode=memory&cache=shared"):
        make_private({"database": name})
    assert list(tmp_path.iterdir()) == []
