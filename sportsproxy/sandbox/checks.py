"""System checks for the sandbox's settings, run with `manage.py check --deploy`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register


@register(Tags.security, deploy=True)
def check_signing_key_is_its_own(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """sandbox.E001: the tokens' signing key is not the site's SECRET_KEY."""
    signing_key = getattr(settings, "SPORTS_SANDBOX_SIGNING_KEY", "")
    if not signing_key or signing_key != settings.SECRET_KEY:
        return []
    return [
        Error(
            "SPORTS_SANDBOX_SIGNING_KEY equals DJANGO_SECRET_KEY (the SECRET_KEY setting): whoever learns one "
            "can forge both the site's sessions and the sandbox's tokens.",
            hint="Give SPORTS_SANDBOX_SIGNING_KEY a random value of its own, e.g. the output of "
            'python -c "import secrets; print(secrets.token_urlsafe(48))".',
            id="sandbox.E001",
        )
    ]
