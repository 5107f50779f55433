"""Fixtures for the parts taken out of this repository: a wheel and an sdist, virtual environments, and a key of
the standalone sandbox (the plugin's `sports_sandbox`, another process) for them to call."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sportsproxy.testing import SportsSandbox
from tests.checkout import clean_checkout
from tests.once_per_run import once_per_run
from tests.standalone.foreign_site import (
    PROJECT_ROOT,
    base_dependencies,
    build_dists,
    dev_pins,
    make_venv,
)

COPIED_FOLDERS = ("mintroute", "sportsproxy")


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project as a fresh clone has it, outside the repository (one per worker: pip builds in it)."""
    return clean_checkout(tmp_path_factory.mktemp("checkout"))


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of this project's sdist and wheel, built once per run from a clean checkout."""
    return once_per_run(tmp_path_factory, "dists", lambda folder: build_dists(clean_checkout(folder), folder / "dist"))


@pytest.fixture(scope="session")
def wheel(dists: Path) -> Path:
    (built,) = dists.glob("*.whl")
    return built


@pytest.fixture(scope="session")
def sdist(dists: Path) -> Path:
    (built,) = dists.glob("*.tar.gz")
    return built


def shared_venv(tmp_path_factory: pytest.TempPathFactory, name: str, *requirements: str) -> Path:
    """The interpreter of a new virtual environment holding `requirements`, made once per run and
    shared by every worker (the tests run in it and install nothing more)."""
    return once_per_run(tmp_path_factory, f"venv-{name}", lambda folder: make_venv(folder / "venv", *requirements))


@pytest.fixture(scope="session")
def installed_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment holding the wheel and its base dependencies."""
    return shared_venv(tmp_path_factory, "installed", str(wheel))


@pytest.fixture(scope="session")
def integrations_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment holding the wheel, uvicorn (an ASGI site) and simplejwt (a mobile
    backend's login): what sites that serve through ASGI or sign their apps in with JWTs add."""
    return shared_venv(
        tmp_path_factory, "integrations", str(wheel), "uvicorn", *dev_pins("djangorestframework-simplejwt")
    )


@pytest.fixture(scope="session")
def sandbox_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment holding the wheel's `sandbox` extra, pytest and
    pytest-django: what an integrator's CI installs to test a site against the sandbox."""
    return shared_venv(tmp_path_factory, "sandboxed", f"{wheel}[sandbox]", *dev_pins("pytest", "pytest-django"))


@pytest.fixture(scope="session")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment holding only the four base dependencies."""
    return shared_venv(tmp_path_factory, "copied", *base_dependencies())


def copy_parts(site_root: Path) -> None:
    """What the README's copy steps do: the two folders, without sportsproxy/sandbox/."""
    site_root.mkdir(parents=True, exist_ok=True)
    for folder in COPIED_FOLDERS:
        shutil.copytree(
            PROJECT_ROOT / folder,
            site_root / folder,
            ignore=shutil.ignore_patterns("__pycache__", *(["sandbox"] if folder == "sportsproxy" else [])),
        )


@dataclass
class Sandbox:
    """The standalone sandbox, with one key of a fresh account and a way to revoke it."""

    url: str
    api_key: str
    revoke: Callable[[], None]


@pytest.fixture
def sandbox(sports_sandbox: SportsSandbox) -> Sandbox:
    secret = sports_sandbox.create_key(f"foreign-site-{secrets.token_hex(4)}", tier="starter")
    return Sandbox(url=sports_sandbox.base_url, api_key=secret, revoke=lambda: sports_sandbox.revoke(secret))
