"""The server's data folder: its SQLite database and the key that signs its tokens.

One folder per server: a temporary one, removed when the server stops, or the `--data` folder,
kept so that accounts, keys and tokens of earlier runs still work.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

DATA_DIR_VARIABLE = "SPORTS_SANDBOX_DATA_DIR"  # how server.py tells settings.py where the folder is
DATABASE_NAME = "sandbox.sqlite3"
SIGNING_KEY_NAME = "signing-key"


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
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    key = secrets.token_urlsafe(48)
    with os.fdopen(descriptor, "w") as file:
        file.write(key)
    return key
