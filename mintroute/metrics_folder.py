"""The workers' metrics folder (prometheus_client's multiprocess mode, PROMETHEUS_MULTIPROC_DIR): read
for /metrics, and a dead worker's files folded into one archive per metric type.

- `Collector` adds up every file of the folder as prometheus_client's MultiProcessCollector does, but
  a file it cannot read (empty, truncated, not the library's format, not a regular file) is skipped and
  logged once per process and file name: /metrics answers without it, never with a 500.
- `fold_dead_worker` (gunicorn's `child_exit`, config/gunicorn.conf.py) adds a dead worker's counters,
  histograms and summaries into `counter_archive.db`, `histogram_archive.db` and `summary_archive.db`,
  removes its files and, as the library's `mark_process_dead` does, its live gauges. Its counts stay,
  and the folder holds at most the live workers' files and the archives, however often workers restart.

A fold and a read never overlap (an exclusive and a shared lock on the folder's `metrics.lock`): a read
sees a dead worker's counts once, in its file or in the archive. Standard library and prometheus_client
only: the fold runs in gunicorn's master, which loads no Django.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

LOCK_NAME = "metrics.lock"
ADDED_UP = ("counter", "histogram", "summary")  # the types whose values add up across processes

_skipped: set[str] = set()  # the file names already logged by this process
_skipped_lock = threading.Lock()


class Collector:
    """Every readable metrics file of `folder`, added up; the others skipped and logged once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def collect(self) -> Iterable[Any]:
        from prometheus_client.multiprocess import MultiProcessCollector

        with _locked(self.folder, fcntl.LOCK_SH):
            files = [str(path) for path in sorted(self.folder.glob("*.db")) if readable(path)]
            merged: Iterable[Any] = MultiProcessCollector.merge(files, accumulate=True)  # type: ignore[no-untyped-call]
            return merged


def readable(path: Path) -> bool:
    """Whether prometheus_client reads `path` as a metrics file; when not, it is logged (once) and skipped."""
    from prometheus_client.multiprocess import MultiProcessCollector

    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            raise ValueError("not a regular file")
        MultiProcessCollector.merge([str(path)], accumulate=False)  # type: ignore[no-untyped-call]
    except FileNotFoundError:
        return False  # a dead worker's live gauge, removed since the listing
    except Exception as error:  # whatever garbage raises (struct.error, UnicodeDecodeError, ValueError, ...)
        with _skipped_lock:
            first = path.name not in _skipped
            _skipped.add(path.name)
        if first:
            logger.warning(
                "Skipped %s in the metrics folder: it is not a metrics file (%s: %s); /metrics answers without it "
                "(logged once per process)",
                path,
                type(error).__name__,
                error,
            )
        return False
    return True


def fold_dead_worker(pid: int, folder: Path) -> None:
    """Add worker `pid`'s counts into the folder's archives and remove its files (see the module's docstring)."""
    from prometheus_client import multiprocess

    with _locked(folder, fcntl.LOCK_EX):
        multiprocess.mark_process_dead(pid, str(folder))  # type: ignore[no-untyped-call]
        for kind in ADDED_UP:
            dead = folder / f"{kind}_{pid}.db"
            if not dead.exists():
                continue
            archive = folder / f"{kind}_archive.db"
            _write(archive, [path for path in (archive, dead) if path.exists() and readable(path)])
            dead.unlink()


def _write(archive: Path, files: list[Path]) -> None:
    """`files` added up into a new `archive` (written beside it, then moved over it)."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key
    from prometheus_client.multiprocess import MultiProcessCollector

    # Not accumulated: buckets stay per bucket, as the library writes them (its merge's docstring says so).
    merged = MultiProcessCollector.merge([str(path) for path in files], accumulate=False)  # type: ignore[no-untyped-call]
    written = archive.with_name(f"{archive.name}.new")  # not *.db: no read lists it
    written.unlink(missing_ok=True)
    os.close(os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    values = MmapedDict(str(written))  # type: ignore[no-untyped-call]
    try:
        for metric in merged:
            for sample in metric.samples:
                labels = sample.labels
                key = mmap_key(metric.name, sample.name, list(labels), list(labels.values()), metric.documentation)
                values.write_value(key, sample.value, 0.0)  # type: ignore[no-untyped-call]
    finally:
        values.close()  # type: ignore[no-untyped-call]
    os.replace(written, archive)


@contextmanager
def _locked(folder: Path, how: int) -> Iterator[None]:
    descriptor = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(descriptor, how)
        yield
    finally:
        os.close(descriptor)  # and with it the lock
