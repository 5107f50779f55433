"""A folder a server keeps for itself: the standalone sandbox's `--data` folder, and the site's metrics
folder (PROMETHEUS_MULTIPROC_DIR, config/serve.py).

What another user could plant or change there, the server would trust: so `claim` makes a missing folder
(mode 0700) and refuses an existing one that another user owns or that group or others can write to, and
any entry inside, at any depth, that is a symbolic link, that another user owns, or that group or others
can write to. Each refusal is one sentence naming the entry and what to do. Standard library only: the
sandbox's server and `make serve` check their folder before Django starts.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH


class PrivateFolderError(Exception):
    """A folder the server will not use; the message is a sentence that says how to fix it."""


@dataclass(frozen=True)
class Wording:
    """How the refusals name the folder: `name` ("data folder"), what a planted entry could do (`harm`:
    "sign tokens"), and the option that chooses another folder (`option`: "--data")."""

    name: str
    harm: str
    option: str


def claim(folder: Path, wording: Wording) -> None:
    """Make `folder` (mode 0700) when it is missing; refuse it, or an entry in it, that is not this user's alone."""
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass  # an existing folder: checked below, as a new one is
    except OSError as error:
        message = f"Cannot create the {wording.name} {folder}: {error.strerror}. Choose another {wording.option}."
        raise PrivateFolderError(message) from None
    status = folder.stat()
    if not stat.S_ISDIR(status.st_mode):
        raise PrivateFolderError(f"The {wording.name} {folder} is not a folder. Choose a folder for {wording.option}.")
    require_own(folder, status, shared=SHARED_WRITE, what=f"The {wording.name}", fix="go-w", wording=wording)
    for entry in _entries(folder):
        _require_own_entry(entry, wording)


def require_own(path: Path, status: os.stat_result, *, shared: int, what: str, fix: str, wording: Wording) -> None:
    """Refuse `path` (`status`, its stat) when another user owns it or when its mode has any of the `shared` bits."""
    if status.st_uid != os.geteuid():
        raise PrivateFolderError(
            f"{what} {path} belongs to another user (uid {status.st_uid}): anyone who can write there can "
            f"{wording.harm}. Choose a {wording.option} folder of your own, or a new path that the server creates."
        )
    if status.st_mode & shared:
        raise PrivateFolderError(
            f"{what} {path} is open to other users (mode {stat.S_IMODE(status.st_mode):04o}). "
            f"Run `chmod {fix} {path}`, or choose another {wording.option}."
        )


def _entries(folder: Path) -> list[Path]:
    """Everything under `folder`, at every depth, links included and not followed."""
    found: list[Path] = []
    for parent, folders, files in os.walk(folder, followlinks=False):
        found += [Path(parent, name) for name in sorted([*folders, *files])]
    return found


def _require_own_entry(entry: Path, wording: Wording) -> None:
    """Refuse, in one sentence naming it, an entry the server cannot have written alone."""
    try:
        status = entry.lstat()
    except FileNotFoundError:
        return  # gone since the walk: nothing left to trust
    where = f"{entry} in the {wording.name}"
    if stat.S_ISLNK(status.st_mode):
        raise PrivateFolderError(
            f"{where} is a symbolic link, which the server never makes and which could lead anywhere: "
            f"remove it, or choose another {wording.option}."
        )
    if status.st_uid != os.geteuid():
        raise PrivateFolderError(
            f"{where} belongs to another user (uid {status.st_uid}), who could have planted it to {wording.harm}: "
            f"remove it, or choose another {wording.option}."
        )
    if status.st_mode & SHARED_WRITE:
        raise PrivateFolderError(
            f"{where} is writable by other users (mode {stat.S_IMODE(status.st_mode):04o}), who may have changed "
            f"it: remove it, or choose another {wording.option}."
        )
