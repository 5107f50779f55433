"""A foreign site's own custom user model (`AUTH_USER_MODEL`), keyed by something other than an integer."""

from __future__ import annotations

from pathlib import Path

from tests.standalone.foreign_site import ForeignSite

# The primary key field of each kind of user model a host site may have.
PRIMARY_KEYS = {
    "uuid": "id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)",
    "string": "id = models.CharField(primary_key=True, max_length=40, default=new_user_key, editable=False)",
}

MODELS = """\
import secrets
import uuid

from django.contrib.auth.models import AbstractUser
from django.db import models


def new_user_key() -> str:
    return "usr_" + secrets.token_hex(8)


class User(AbstractUser):
    {primary_key}
"""

SETTINGS = """
INSTALLED_APPS += ["accounts"]
AUTH_USER_MODEL = "accounts.User"
"""


def site_with_user_model(root: Path, python: Path, api_key: str, base_url: str, key_kind: str) -> ForeignSite:
    """A foreign site whose users are its own `accounts.User`, keyed as `key_kind` says, migrated."""
    site = ForeignSite(root, python, api_key, base_url, extra_settings=SETTINGS).write()
    app = root / "accounts"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "models.py").write_text(MODELS.format(primary_key=PRIMARY_KEYS[key_kind]))
    site.manage("makemigrations", "accounts", "-v", "0")
    return site
