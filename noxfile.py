"""The test matrix: every supported pair of Python and Django, one virtual environment each.

`make matrix` (CI runs it after `make test`: .ci/run) runs them but the site's own pair (SITE_PAIR: `make
test`'s pytest run is that pair, with every test), two at a time; `nox -s "tests(python='3.13', django='6.1')"`
runs one pair, `nox --list` names them all. The pairs are read from pyproject.toml's classifiers, so what the
package declares and what is tested cannot drift apart. Each environment holds this project's
runtime requirements at the lock's pins (tests/lock.py) with the pair's Django in place of the lock's, and
pytest; every package they pull in is held to the lock's pin too (pip's constraints, without hashes: the
pair's Django is not in the lock). It runs what differs between pairs: the tests of the mint route, the
Django glue and the pytest plugin, and tests/standalone/, whose virtual environments use that pair's
interpreter and Django; and the SDK's and the sandbox's own tests on the covering pairs, in which every
Python and every Django appear once (PAIR_TESTS, COVERING_TESTS).

Interpreters come from the machine: pyenv's installed versions (pyenv's shims run only the versions
it has selected, so the newest installed patch of each supported minor is selected here), else
`python3.X` on PATH. Nox never downloads one. With `CI` set, a missing interpreter fails the run;
elsewhere nox reports it and skips that pair.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # nox loads this file by its path: the lock's reader imports from the checkout

from tests.lock import pins  # noqa: E402

REQUIREMENTS = ROOT / "requirements.txt"
DEV_REQUIREMENTS = ROOT / "requirements-dev.txt"
# Pinned in requirements-dev.txt; uv makes the standalone tests' environments and builds the wheel.
TEST_RUNNER = ("pytest", "pytest-django", "pytest-env", "pytest-asyncio", "uv")
# What differs between pairs (docs/contributing.md, "What the matrix runs"). On every pair: what runs inside the
# host site's Django (the route, the glue, the pytest plugin an integrator's suite loads). On the covering pairs only
# (every declared Python and every declared Django at least once): the standalone tests, which install the parts
# on that pair's Python and Django (each version is installed and driven once, and their time is most of a pair's),
# the SDK's core and the glue's secret rules (zxcvbn's estimate), which know nothing of Django, and the sandbox's
# rules, which are the service's, not the host's. A covering test inside a PAIR_TESTS folder is left out elsewhere.
PAIR_TESTS = ("tests/mintroute", "tests/sportsproxy/django", "tests/sportsproxy/test_testing.py")
COVERING_TESTS = (
    "tests/standalone",
    "tests/sportsproxy/django/test_secrets.py",
    "tests/sportsproxy/sandbox",
    "tests/sportsproxy/test_client.py",
    "tests/sportsproxy/test_client_async.py",
    "tests/sportsproxy/test_exports.py",
    "tests/sportsproxy/test_realtime.py",
)

# The Django release each series is tested at; the series requirements.txt pins is tested at that pin.
DJANGO_RELEASES = {"6.0": "6.0.10", "6.1": "6.1.3"}
# The oldest Python each Django series supports (Django's own rule: 6.x needs 3.12 or newer).
DJANGO_OLDEST_PYTHON = {"5.2": (3, 10), "6.0": (3, 12), "6.1": (3, 12)}

nox.options.default_venv_backend = "uv"
nox.options.download_python = "never"
nox.options.error_on_missing_interpreters = bool(os.environ.get("CI"))
nox.options.reuse_venv = "yes"  # kept between runs; each run's install brings it up to date (a second with uv)


def declared_versions(prefix: str) -> list[str]:
    """The versions pyproject.toml's trove classifiers declare under `prefix`, e.g. "Framework :: Django"."""
    classifiers: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    pattern = re.compile(rf"{re.escape(prefix)} :: (\d+\.\d+)$")
    return [match.group(1) for classifier in classifiers if (match := pattern.match(classifier))]


def supported_pairs() -> list[tuple[str, str]]:
    """(Python, Django) for every declared Python and every declared Django that supports it."""
    return [
        (python, django)
        for python in declared_versions("Programming Language :: Python")
        for django in declared_versions("Framework :: Django")
        if tuple(int(part) for part in python.split(".")) >= DJANGO_OLDEST_PYTHON[django]
    ]


# Tests that pin their own pair, the same on every pair: the README's steps always run on Python 3.13 and
# Django 6.1 (the pair a new integrator gets), in an environment of their own. `make test`'s pytest run has them.
SAME_ON_EVERY_PAIR = ("tests/standalone/test_readme_steps.py",)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def covering_pairs(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Pairs among `pairs` in which every Python and every Django appears at least once: the i-th oldest
    Python with the i-th oldest Django it supports (3.11 with 5.2, 3.12 with 6.0, 3.13 with 6.1)."""
    chosen: list[tuple[str, str]] = [SITE_PAIR] if SITE_PAIR in pairs else []
    for python in sorted({python for python, _ in pairs}, key=version_key):
        supported = sorted((django for version, django in pairs if version == python), key=version_key)
        untested = [django for django in supported if django not in {series for _, series in chosen}]
        chosen.append((python, (untested or supported)[0]))
    for django in sorted({django for _, django in pairs}, key=version_key):
        if django not in {series for _, series in chosen}:
            chosen.append(next(pair for pair in pairs if pair[1] == django))
    return chosen


def pytest_arguments(python: str, django: str) -> list[str]:
    """The paths one pair runs, and what it leaves out: PAIR_TESTS, and COVERING_TESTS too on a covering pair
    (elsewhere they are ignored, so that one inside a PAIR_TESTS folder is left out); never SAME_ON_EVERY_PAIR."""
    covering = (python, django) in covering_pairs(PAIRS)
    paths = (*PAIR_TESTS, *COVERING_TESTS) if covering else PAIR_TESTS
    ignored = (*SAME_ON_EVERY_PAIR, *(() if covering else COVERING_TESTS))
    return [*paths, *(f"--ignore={path}" for path in ignored)]


def django_release(series: str) -> str:
    """The exact Django release the matrix installs for `series` ("6.1" -> "6.1.3")."""
    (pin,) = pins(REQUIREMENTS)["django"]
    locked = pin.split("==")[1]
    return locked if locked.startswith(f"{series}.") else DJANGO_RELEASES[series]


def select_pyenv_versions() -> None:
    """Let pyenv's shims run the newest installed patch of every declared Python (PYENV_VERSION)."""
    versions_dir = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if not versions_dir.is_dir():
        return
    installed = [path.name for path in versions_dir.iterdir() if re.fullmatch(r"\d+\.\d+\.\d+", path.name)]
    chosen = []
    for minor in declared_versions("Programming Language :: Python"):
        patches = [name for name in installed if name.startswith(f"{minor}.")]
        if patches:
            chosen.append(max(patches, key=lambda name: tuple(int(part) for part in name.split("."))))
    selected = [name for name in os.environ.get("PYENV_VERSION", "").split(":") if name]
    os.environ["PYENV_VERSION"] = ":".join(dict.fromkeys([*selected, *chosen]))


def constraints(session: nox.Session) -> str:
    """A constraints file of the lock's pins (requirements-dev.txt's) less Django's; returns its path."""
    path = Path(session.create_tmp()) / "constraints.txt"
    path.write_text(
        "".join(f"{pin}\n" for name, locked in pins(DEV_REQUIREMENTS).items() if name != "django" for pin in locked)
    )
    return str(path)


def site_pair() -> tuple[str, str]:
    """The pair `make test`'s own pytest run is: the interpreter nox runs on (the checkout's .venv) and the
    Django series the lock pins."""
    (pin,) = pins(REQUIREMENTS)["django"]
    return f"{sys.version_info.major}.{sys.version_info.minor}", ".".join(pin.split("==")[1].split(".")[:2])


select_pyenv_versions()
SITE_PAIR = site_pair()
PAIRS = supported_pairs()
# The covering pairs first: they run the most, and `nox --parallel` starts sessions in this order.
MATRIX_ORDER = sorted(PAIRS, key=lambda pair: pair not in covering_pairs(PAIRS))


# allow_parallel: the pairs share nothing (own environment, temporary folders, free ports), so `nox --parallel 2`
# runs two at once. `make matrix` (the tag) runs every pair but SITE_PAIR: `make test`'s pytest run is that pair,
# with every test; `nox -s` still runs it by name.
@nox.session(allow_parallel=True)
@nox.parametrize(
    ("python", "django"),
    [nox.param(*pair, tags=[] if pair == SITE_PAIR else ["matrix"]) for pair in MATRIX_ORDER],
)
def tests(session: nox.Session, django: str) -> None:
    """The route's, the glue's and the plugin's tests on one pair; on a covering pair the standalone install tests,
    the SDK's, the secret rules' and the sandbox's too."""
    runtime = [pin for name, locked in pins(REQUIREMENTS).items() if name != "django" for pin in locked]
    session.install("-c", constraints(session), *runtime, *TEST_RUNNER, f"Django=={django_release(django)}")
    arguments = pytest_arguments(str(session.python), django)
    session.run("python", "-m", "pytest", *arguments, "-q", "-p", "no:cacheprovider", *session.posargs)
