"""Django's SQLite backend, except that the database file is kept private (mode 0600): a file it
is about to create is created first, empty, with that mode, since SQLite itself would create it
readable by everyone (0644 under the usual umask) and the file holds sessions and password hashes.
SQLite gives its journal and WAL files the database file's mode, so they are private too. A file
an older checkout left readable by others (before this backend) is made private when opened.

Settings select it for every SQLite database (config/settings.py). Creating the file here, where
Django opens it, touches nothing else: a umask would make collectstatic's files private too, and a
chmod after SQLite created the file leaves a moment in which another user can open it and keep it
open.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from django.db.backends.sqlite3 import base

PRIVATE_MODE = 0o600


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        make_private(conn_params)
        return super().get_new_connection(conn_params)


def make_private(conn_params: dict[str, Any]) -> None:
    """Create the database's file empty with mode 0600 if it is a file and does not exist yet; take
    group and others' access away from one that does."""
    name = str(conn_params.get("database", ""))
    if not name or name == ":memory:" or name.startswith("file:"):
        return  # in memory, or a URI whose options (mode=memory, ...) SQLite reads itself
    try:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE))
    except FileExistsError:
        mode = stat.S_IMODE(os.stat(name).st_mode)
        if mode & 0o077:
            os.chmod(name, mode & 0o700)
