"""`make test` refuses a lock that disagrees with pyproject.toml, and says to run `make lock`.

Run by make in a copy of the files the check reads, with this environment's venv as it is (nothing
installed into it) and its uv, offline: the check needs no index.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lock import EXPORTS, entry, pins

ROOT = Path(__file__).resolve().parents[1]
COPIED = (
    "pyproject.toml",
    "uv.lock",
    *EXPORTS,
    "README.md",
    "LICENSE",
    "Makefile",
    "tests/__init__.py",
    "tests/lock.py",
    "tests/lockfile.py",
)
ADVICE = "run `make lock`"
VENV = Path(sys.executable).parents[1]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for name in COPIED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def lockcheck(checkout: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - make, with this test's own arguments
        # -o install-dev: this environment is used as it is, never installed into from the altered copy
        ["make", "--no-print-directory", "-o", "install-dev", "lockcheck", f"VENV={VENV}"],  # noqa: S607
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_current_lock_passes(checkout: Path) -> None:
    answer = lockcheck(checkout)
    assert answer.returncode == 0, answer.stdout + answer.stderr


def test_a_changed_declaration_without_make_lock_fails_saying_to_run_it(checkout: Path) -> None:
    pyproject = checkout / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('    "whitenoise>=6.9",\n', '    "whitenoise>=6.9",\n    "sqlparse>=0.5",\n')
    )
    answer = lockcheck(checkout)
    assert answer.returncode != 0
    assert f"The lock disagrees with pyproject.toml's dependencies (uv.lock): {ADVICE}" in answer.stderr


def test_a_hand_edited_export_fails_saying_to_run_make_lock(checkout: Path) -> None:
    requirements = checkout / "requirements.txt"
    requirements.write_text(
        requirements.read_text().replace(pins(ROOT / "requirements.txt")["redis"][0], "redis==5.0.0")
    )
    answer = lockcheck(checkout)
    assert answer.returncode != 0
    assert f"(requirements.txt): {ADVICE}" in answer.stderr


def test_every_line_of_both_exports_is_pinned_with_hashes() -> None:
    for name in EXPORTS:
        entries = (ROOT / name).read_text().replace("\\\n", " ").splitlines()
        requirements = [entry for entry in entries if entry.strip() and not entry.lstrip().startswith("#")]
        assert requirements, name
        assert all("==" in entry and "--hash=sha256:" in entry for entry in requirements), name
    assert "httpx2" in pins(ROOT / "requirements.txt")
    assert {"httpx", "httpcore"}.isdisjoint(pins(ROOT / "requirements-dev.txt"))


def test_make_install_refuses_a_file_whose_hash_the_lock_does_not_hold(checkout: Path) -> None:
    """The site's install (`make install`) checks every hash: sqlparse's altered, and it fails."""
    requirements = checkout / "requirements.txt"
    altered = requirements.read_text()
    for digest in re.findall(r"--hash=sha256:([0-9a-f]{64})", entry(requirements, "sqlparse")):  # wheel and sdist
        altered = altered.replace(digest, "0" * 64)
    requirements.write_text(altered)
    answer = subprocess.run(  # noqa: S603 - make, with this test's own arguments
        ["make", "--no-print-directory", "install", f"PYTHON={sys.executable}"],  # noqa: S607
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert answer.returncode != 0
    assert "sqlparse" in answer.stderr, answer.stderr
    assert "hash" in answer.stderr.lower(), answer.stderr
    assert not (checkout / ".venv" / ".installed").exists()
