"""Fixtures for the parts taken out of this repository: a wheel, virtual environments, and the
sandbox service served over HTTP by this project (pytest-django's live server) for them to call."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sportsproxy.sandbox.keys import hash_secret, issue_key
from sportsproxy.sandbox.models import Account, ApiKey
from tests.standalone.foreign_site import PROJECT_ROOT, base_dependencies, build_wheel, clean_checkout, make_venv

COPIED_FOLDERS = ("mintroute", "sportsproxy")


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project as a fresh clone has it, outside the repository."""
    return clean_checkout(tmp_path_factory.mktemp("checkout"))


@pytest.fixture(scope="session")
def wheel(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(checkout, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def installed_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment holding the wheel and its base dependencies."""
    return make_venv(tmp_path_factory.mktemp("installed") / "venv", str(wheel))


@pytest.fixture(scope="session")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment holding only the four base dependencies."""
    return make_venv(tmp_path_factory.mktemp("copied") / "venv", *base_dependencies())


def copy_parts(site_root: Path) -> None:
    """What the README's copy steps do: the two folders, without sportsproxy/sandbox/."""
    site_root.mkdir(parents=True, exist_ok=True)
    for folder in COPIED_FOLDERS:
        shutil.copytree(
            PROJECT_ROOT / folder,
            site_root / folder,
            ignore=shutil.ignore_patterns("__pycache__", "sandbox") if folder == "sportsproxy" else None,
        )


@dataclass
class Sandbox:
    """The sandbox service, served over HTTP by this project, with one key of a fresh account."""

    url: str
    api_key: str
    revoke: Callable[[], None]


@pytest.fixture
def sandbox(live_server: Any, transactional_db: None) -> Sandbox:
    _, secret = issue_key(Account.objects.create(name="foreign-site", tier="starter"), "test")

    def revoke() -> None:
        ApiKey.objects.get(secret_hash=hash_secret(secret)).revoke()

    return Sandbox(url=live_server.url, api_key=secret, revoke=revoke)
