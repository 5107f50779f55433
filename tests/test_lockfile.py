"""Nothing from a requirements file is installed or run before the file is known to be uv.lock's export.

The end-to-end cases run `make install-dev` and `make install` in a copy of the files they read, with a
requirements file edited by hand: a hashed local wheel whose .pth would write a marker file the moment any
Python started with it installed, and a hash changed. Both fail with the sentence that says to run
`make lock`, before the virtual environment exists.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.lock import entry, pins
from tests.lockfile import problems

ROOT = Path(__file__).resolve().parents[1]
COPIED = (
    "pyproject.toml",
    "uv.lock",
    "requirements.txt",
    "requirements-dev.txt",
    "Makefile",
    "tests/__init__.py",
    "tests/lock.py",
    "tests/lockfile.py",
)
ADVICE = "run `make lock`"
SQLPARSE = pins(ROOT / "requirements.txt")["sqlparse"][0]  # "sqlparse==0.6.1", as the lock pins it today


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    copy = tmp_path / "checkout"
    for name in COPIED:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    return copy


def planted_wheel(folder: Path, marker: Path) -> Path:
    """A wheel whose .pth writes `marker` when any Python starts with it installed."""
    wheel = folder / "planted-1.0-py3-none-any.whl"
    files = {
        "planted.pth": f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n",
        "planted-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: planted\nVersion: 1.0\n",
        "planted-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr("planted-1.0.dist-info/RECORD", "".join(f"{name},,\n" for name in files))
    return wheel


def with_planted_wheel(requirements: Path, marker: Path) -> None:
    wheel = planted_wheel(requirements.parent, marker)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    requirements.write_text(requirements.read_text() + f"./{wheel.name} \\\n    --hash=sha256:{digest}\n")


def with_changed_hash(requirements: Path, name: str) -> None:
    text = requirements.read_text()
    digest = re.findall(r"--hash=sha256:([0-9a-f]{64})", entry(requirements, name))[0]
    requirements.write_text(text.replace(digest, hashlib.sha256(b"another file").hexdigest()))


def make(checkout: Path, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - make, with this test's own arguments
        ["make", "--no-print-directory", target, f"PYTHON={sys.executable}"],  # noqa: S607
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_exports_as_make_lock_wrote_them_pass() -> None:
    assert problems(ROOT) == []


@pytest.mark.parametrize("target", ["install-dev", "install"])
def test_a_planted_wheel_fails_before_anything_is_installed_or_run(checkout: Path, target: str) -> None:
    marker = checkout.parent / "planted-ran"
    with_planted_wheel(checkout / "requirements-dev.txt", marker)
    answer = make(checkout, target)
    assert answer.returncode != 0
    stray = "a line that is not a hashed pin of uv.lock: './planted-1.0-py3-none-any.whl --hash=sha256:"
    assert f"requirements-dev.txt does not match uv.lock ({stray}" in answer.stderr
    assert ADVICE in answer.stderr
    assert not (checkout / ".venv").exists()
    assert not marker.exists()


def test_a_changed_hash_fails_before_anything_is_installed(checkout: Path) -> None:
    with_changed_hash(checkout / "requirements-dev.txt", "sqlparse")
    answer = make(checkout, "install-dev")
    assert answer.returncode != 0
    assert f"requirements-dev.txt does not match uv.lock ({SQLPARSE}'s hashes are not uv.lock's): {ADVICE}" in (
        answer.stderr
    ), answer.stderr
    assert not (checkout / ".venv").exists()


def test_a_pinned_package_the_declarations_do_not_need_fails(checkout: Path) -> None:
    """A line copied from requirements-dev.txt into requirements.txt: in uv.lock, hashes and all, but not the site's."""
    requirements = checkout / "requirements.txt"
    requirements.write_text(requirements.read_text() + entry(checkout / "requirements-dev.txt", "pytest"))
    assert any("requirements.txt does not match uv.lock (pytest==" in problem for problem in problems(checkout))


def test_a_removed_pin_fails(checkout: Path) -> None:
    requirements = checkout / "requirements.txt"
    requirements.write_text(requirements.read_text().replace(entry(requirements, "sqlparse"), ""))
    assert problems(checkout) == [
        f"requirements.txt does not match uv.lock ({SQLPARSE} is missing): {ADVICE} and commit what it changes,"
        " never edit it by hand."
    ]


def test_a_declaration_added_without_make_lock_fails(checkout: Path) -> None:
    pyproject = checkout / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('    "whitenoise>=6.9",\n', '    "whitenoise>=6.9",\n    "six",\n')
    )
    assert problems(checkout) == [
        f"pyproject.toml's dependencies disagree with uv.lock (the 'site' group): {ADVICE} and commit what it changes."
    ]


def test_the_check_imports_nothing_but_the_standard_library() -> None:
    """`-I -S`: no site-packages, no current folder on the path; it runs before any environment exists."""
    answer = subprocess.run(  # noqa: S603 - this interpreter, this project's file
        [sys.executable, "-I", "-S", str(ROOT / "tests" / "lockfile.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (answer.returncode, answer.stderr) == (0, "")
