"""The template and the products generated from it, once per test module; one virtualenv from the lock for them all,
made once in the run (every worker's products share it, and the bytecode the first to import a module compiles)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.once_per_run import once_per_run
from tests.template.generate import clone_template, copier_copy, make_venv
from tests.template.products import Product


@pytest.fixture(scope="session")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return once_per_run(tmp_path_factory, "template-venv", lambda folder: make_venv(folder / "venv"))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this checkout's last commit: the template as `copier copy <its git URL>` sees it."""
    return clone_template(tmp_path_factory.mktemp("template") / "starter")


@pytest.fixture(scope="module")
def generated(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[Product], Path]:
    """The product of each combination, generated once for the module when a test first asks for it."""
    made: dict[str, Path] = {}

    def project(product: Product) -> Path:
        if product.key not in made:
            made[product.key] = copier_copy(template, tmp_path_factory.mktemp(product.key) / "project", product.answers)
        return made[product.key]

    return project
