"""Which pytest-xdist worker this process is: for what each worker must hold of its own on a shared
service (a database of the shared Redis), where a free port or a temporary folder cannot do."""

from __future__ import annotations

import os


def worker_index() -> int:
    """0 without xdist, N on xdist's worker "gwN"."""
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
