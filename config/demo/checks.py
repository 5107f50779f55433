"""The demo's deploy check: the demo user, with its published password, never serves production.

A checkout where `make demo` ran keeps its SQLite database (and its `demo` user) next to `.env`;
`make serve` runs `check --deploy` and so refuses to start on it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.core.checks import CheckMessage, Error, Tags, register
from django.db import DatabaseError

from config.demo.mode import DEFAULT_DEMO_PASSWORD, DEMO_USERNAME

REMOVE = (
    'python manage.py shell -c "from django.contrib.auth import get_user_model; '
    f"get_user_model().objects.filter(username='{DEMO_USERNAME}').delete()\""
)


@register(Tags.security, deploy=True)
def check_no_demo_user(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """config.E001: no user named `demo` whose password is the published demo password."""
    try:
        # The hash is compared here, not through User.check_password, which may rewrite it.
        user = get_user_model()._default_manager.filter(username=DEMO_USERNAME).first()
    except DatabaseError:  # not migrated yet: no users at all
        return []
    if user is None or not check_password(DEFAULT_DEMO_PASSWORD, user.password):
        return []
    return [
        Error(
            f"The user {DEMO_USERNAME!r} exists with the published demo password ({DEFAULT_DEMO_PASSWORD}): "
            "anyone can log in as it and mint tokens. This database is the demo's (make demo ran here).",
            hint=f"Remove the user ({REMOVE}) or give it another password "
            f"(python manage.py changepassword {DEMO_USERNAME}), or point DATABASE_URL at the production database.",
            id="config.E001",
        )
    ]
