"""The supported versions: what pyproject.toml declares, the pairs nox runs, and a missing interpreter.

The matrix itself (`make matrix`) runs outside this test run; these tests pin down what it is made of.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.lock import pins

ROOT = Path(__file__).resolve().parents[1]
NOX = Path(sys.executable).parent / "nox"
PYTHONS = ("3.11", "3.12", "3.13")
DJANGOS = ("5.2", "6.0", "6.1")
# Django 6.x needs Python 3.12 or newer.
PAIRS = [(python, django) for python in PYTHONS for django in DJANGOS if python != "3.11" or django == "5.2"]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def nox(*arguments: str, env: dict[str, str], envdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - this project's own nox and noxfile
        [str(NOX), "--noxfile", str(ROOT / "noxfile.py"), "--envdir", str(envdir), *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_pyproject_declares_exactly_the_supported_pythons() -> None:
    requires = SpecifierSet(PROJECT["requires-python"])
    assert [version for version in ("3.10", "3.11", "3.12", "3.13", "3.14") if requires.contains(f"{version}.0")] == [
        *PYTHONS
    ]
    declared = [
        c.rsplit(" :: ", 1)[1] for c in PROJECT["classifiers"] if c.startswith("Programming Language :: Python :: 3.")
    ]
    assert declared == list(PYTHONS)


def test_pyproject_admits_exactly_the_supported_djangos_with_the_newest_drf() -> None:
    requirements = {Requirement(line).name.lower(): Requirement(line) for line in PROJECT["dependencies"]}
    django = requirements["django"].specifier
    admitted = [series for series in ("5.1", "5.2", "6.0", "6.1", "6.2") if django.contains(f"{series}.3")]
    assert admitted == list(DJANGOS)
    declared = [c.rsplit(" :: ", 1)[1] for c in PROJECT["classifiers"] if c.startswith("Framework :: Django :: ")]
    assert declared == list(DJANGOS)
    (drf,) = pins(ROOT / "requirements.txt")["djangorestframework"]  # the newest, as the lock pins it
    assert requirements["djangorestframework"].specifier.contains(drf.split("==")[1])


# `make test`'s own pytest run: this interpreter and the lock's Django, every test.
SITE_PAIR = (f"{sys.version_info.major}.{sys.version_info.minor}", "5.2")
COVERING_PAIRS = [("3.12", "6.0"), ("3.13", "6.1")]  # with SITE_PAIR, every Python and every Django once


def test_nox_runs_one_session_per_supported_pair_and_the_matrix_all_but_the_sites(tmp_path: Path) -> None:
    listed = nox("--list", "--json", env=dict(os.environ), envdir=tmp_path)
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    pairs = [(session["python"], session["call_spec"]["django"]) for session in sessions]
    assert sorted(pairs) == PAIRS
    matrix = [pair for pair, session in zip(pairs, sessions, strict=True) if session["tags"] == ["matrix"]]
    assert sorted(matrix) == [pair for pair in PAIRS if pair != SITE_PAIR]
    assert matrix[: len(COVERING_PAIRS)] == COVERING_PAIRS  # the longest first: `nox --parallel` starts them in order


@pytest.mark.parametrize(("ci", "outcome", "status"), [("true", "failed", 1), (None, "skipped", 0)])
def test_a_missing_interpreter_fails_the_matrix_in_ci_and_is_skipped_elsewhere(
    tmp_path: Path, ci: str | None, outcome: str, status: int
) -> None:
    # No pyenv and a PATH without Python 3.13: the interpreter cannot be found.
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    if ci is not None:
        env["CI"] = ci
    result = nox("-s", "tests(python='3.13', django='6.1')", env=env, envdir=tmp_path / "envs")
    assert result.returncode == status, result.stdout + result.stderr
    assert f"{outcome}: Python interpreter 3.13 not found" in result.stderr
