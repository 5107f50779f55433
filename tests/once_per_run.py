"""What a test run makes once and shares between pytest-xdist's workers: a wheel, a virtual environment.

Under xdist every worker is a process with session fixtures of its own, so a session fixture that
builds a wheel would build it once per worker. `once_per_run` makes a thing in the run's shared
temporary folder under a file lock: the first worker to ask makes it, the others wait for it (bounded)
and reuse it. Without xdist it is an ordinary once-per-session build. Use it only for what the tests
read and never change (an installed environment, a built archive).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

WAIT_SECONDS = 900  # the longest a worker waits for another's build (a cold pip or uv cache included)


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every worker of this run shares (each worker's own lies inside it)."""
    own = tmp_path_factory.getbasetemp()
    return own.parent if os.environ.get("PYTEST_XDIST_WORKER") else own


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path]) -> Path:
    """`make(folder)` run once in this run, in an empty `folder` named after `name`; the path it returned.

    `name` must say everything that makes one result differ from another ("wheel", "venv-installed")."""
    folder = run_folder(tmp_path_factory) / f"once-{name}"
    done = run_folder(tmp_path_factory) / f"once-{name}.done"
    with (run_folder(tmp_path_factory) / f"once-{name}.lock").open("w") as lock:
        _lock(lock.fileno(), name)
        try:
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
                folder.mkdir()
                done.write_text(str(make(folder)))
            return Path(done.read_text())
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _lock(descriptor: int, name: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise AssertionError(f"another worker held the build of {name!r} for {WAIT_SECONDS} s") from None
            time.sleep(0.2)
