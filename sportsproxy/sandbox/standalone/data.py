"""The server's data folder: its SQLite database and the key that signs its tokens.

One folder per server: a temporary one, removed when the server stops, or the `--data` folder,
kept so that accounts, keys and tokens of earlier runs still work.

The folder holds what forges tokens (the signing key), so it must be the server's user's alone:
`claim` refuses a `--data` folder another user owns or could write to (a planted key would
sign their tokens), and creates a missing one mode 0700. It trusts nothing inside that it did not
write either: any entry at any depth (the database, its journals, any file, folder or link) that
another user owns or that group or others can write is refused, since a planted database mints
tokens with this folder's key, and making the folder private afterwards does not unplant it.
Files are created private (0600) from their first byte: the server runs with the umask
`PRIVATE_UMASK`, and the key is opened 0600.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

DATA_DIR_VARIABLE = "SPORTS_SANDBOX_DATA_DIR"  # how server.py tells settings.py where the folder is
DATABASE_NAME = "sandbox.sqlite3"
SIGNING_KEY_NAME = "signing-key"
PRIVATE_UMASK = 0o077  # folders 0700, files 0600 (SQLite's database and journals included)
_SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH
_SHARED_ACCESS = stat.S_IRWXG | stat.S_IRWXO


class DataFolderError(Exception):
    """A data folder the server will not use; the message is a sentence that says how to fix it."""


def claim(folder: Path) -> None:
    """Make `folder` (mode 0700) when it is missing; refuse it when another user owns it or can write to it."""
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass  # an existing folder: checked below, as a new one is
    except OSError as error:
        message = f"Cannot create the data folder {folder}: {error.strerror}. Choose another --data."
        raise DataFolderError(message) from None
    status = folder.stat()
    if not stat.S_ISDIR(status.st_mode):
        raise DataFolderError(f"The data folder {folder} is not a folder. Choose a folder for --data.")
    _require_own(folder, status, shared=_SHARED_WRITE, what="The data folder", fix="go-w")
    for entry in _entries(folder):
        _require_own_entry(entry)


def data_dir() -> Path:
    """The folder the running server was given."""
    folder = os.environ.get(DATA_DIR_VARIABLE)
    if not folder:
        raise RuntimeError(
            f"{DATA_DIR_VARIABLE} is not set. Start the standalone sandbox with `python -m sportsproxy.sandbox serve`."
        )
    return Path(folder)


def database_path() -> Path:
    return data_dir() / DATABASE_NAME


def signing_key() -> str:
    """The folder's token-signing key, created (readable by its owner only) on first use."""
    path = data_dir() / SIGNING_KEY_NAME
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_own_key(path)
    key = secrets.token_urlsafe(48)
    with os.fdopen(descriptor, "w") as file:
        file.write(key)
    return key


def _read_own_key(path: Path) -> str:
    """An earlier run's key, trusted only when this user wrote it and no one else can read or change it."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:
        raise DataFolderError(f"Cannot read the signing key {path}: {error.strerror}. Remove it.") from None
    with os.fdopen(descriptor) as file:
        _require_own(path, os.fstat(file.fileno()), shared=_SHARED_ACCESS, what="The signing key", fix="go-rwx")
        return file.read().strip()


def _entries(folder: Path) -> list[Path]:
    """Everything under `folder`, at every depth, links included and not followed."""
    found: list[Path] = []
    for parent, folders, files in os.walk(folder, followlinks=False):
        found += [Path(parent, name) for name in sorted([*folders, *files])]
    return found


def _require_own_entry(entry: Path) -> None:
    """Refuse, in one sentence naming it, an entry of the data folder the server cannot have written alone."""
    try:
        status = entry.lstat()
    except FileNotFoundError:
        return  # gone since the walk: nothing left to trust
    if stat.S_ISLNK(status.st_mode):
        raise DataFolderError(
            f"{entry} in the data folder is a symbolic link, which the server never makes and which could "
            "lead anywhere: remove it, or choose another --data."
        )
    if status.st_uid != os.geteuid():
        raise DataFolderError(
            f"{entry} in the data folder belongs to another user (uid {status.st_uid}), who could have planted it "
            "to mint or sign tokens with: remove it, or choose another --data."
        )
    if status.st_mode & _SHARED_WRITE:
        raise DataFolderError(
            f"{entry} in the data folder is writable by other users (mode {stat.S_IMODE(status.st_mode):04o}), "
            "who may have changed it: remove it, or choose another --data."
        )


def _require_own(path: Path, status: os.stat_result, *, shared: int, what: str, fix: str) -> None:
    if status.st_uid != os.geteuid():
        raise DataFolderError(
            f"{what} {path} belongs to another user (uid {status.st_uid}): anyone who can write there can sign "
            "tokens. Choose a --data folder of your own, or a new path that the server creates."
        )
    if status.st_mode & shared:
        raise DataFolderError(
            f"{what} {path} is open to other users (mode {stat.S_IMODE(status.st_mode):04o}). "
            f"Run `chmod {fix} {path}`, or choose another --data."
        )
