"""A copy of this project as a fresh clone has it, for the tests that build from it or deploy it."""

from __future__ import annotations

import shutil
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# What a checkout makes for itself and a fresh clone does not have.
LEFTOVERS = (".git", ".venv", ".nox", "node_modules", "build", "dist", "*.egg-info", "__pycache__", "*.sqlite3", ".env")


def clean_checkout(destination: Path) -> Path:
    """A copy of this project as a fresh clone has it (no venvs, builds or caches), in `destination`/source."""
    source = destination / "source"
    shutil.copytree(PROJECT_ROOT, source, ignore=shutil.ignore_patterns(*LEFTOVERS))
    return source
