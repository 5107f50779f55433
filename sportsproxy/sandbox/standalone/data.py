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

from sportsproxy.django.private_folder import PrivateFolderError, Wording, require_own
from sportsproxy.django.private_folder import claim as claim_private

DATA_DIR_VARIABLE = "SPORTS_SANDBOX_DATA_DIR"  # how server.py tells settings.py where the folder is
DATABASE_NAME = "sandbox.sqlite3"
SIGNING_KEY_NAME = "signing-key"
PRIVATE_UMASK = 0o077  # folders 0700, files 0600 (SQLite's database and journals included)
_SHARED_ACCESS = stat.S_IRWXG | stat.S_IRWXO
DATA_FOLDER = Wording(name="data folder", harm="mint or sign tokens", option="--data")

DataFolderError = PrivateFolderError  # a data folder the server will not use; its message says how to fix it


def claim(folder: Path) -> None:
    """Make `folder` (mode 0700) when it is missing; refuse it when another user owns it or can write to it,
    or when anything inside is a link, another user's, or writable by others (sportsproxy.django.private_folder)."""
    claim_private(folder, DATA_FOLDER)


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
        require_own(
            path,
            os.fstat(file.fileno()),
            shared=_SHARED_ACCESS,
            what="The signing key",
            fix="go-rwx",
            wording=DATA_FOLDER,
        )
        return file.read().strip()
