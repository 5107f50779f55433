"""System checks for the sandbox's settings: every problem `conf.problems()` finds, and, with
`manage.py check --deploy`, the signing key.

The signing key is checked whenever the sandbox is installed: it signs the tokens the sandbox
mints, in-process or mounted. The rules are the glue's, shared with the site's SECRET_KEY.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register

from sportsproxy.django import secrets
from sportsproxy.django.naming import named
from sportsproxy.sandbox import conf

SIGNING_KEY_MIN_LENGTH = 32
FIX = (
    "Give SPORTS_SANDBOX_SIGNING_KEY a random value of its own, e.g. the output of "
    'python -c "import secrets; print(secrets.token_hex(32))".'
)


@register("sandbox")
def check_sandbox_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """sandbox.E003, sandbox.E004: the sandbox's numbers and limits."""
    return [problem.as_check_message() for problem in conf.problems()]


@register(Tags.security, deploy=True)
def check_signing_key_is_its_own(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """sandbox.E001: the tokens' signing key is not the site's SECRET_KEY, nor part of it."""
    signing_key = getattr(settings, "SPORTS_SANDBOX_SIGNING_KEY", "")
    if not signing_key or not secrets.overlap(signing_key, str(settings.SECRET_KEY)):
        return []
    return [
        Error(
            f"SPORTS_SANDBOX_SIGNING_KEY equals, contains or is contained in {named('SECRET_KEY')}, read "
            "forwards or backwards, in any letter case: whoever learns one can forge both the site's sessions "
            "and the sandbox's tokens.",
            hint=FIX,
            id="sandbox.E001",
        )
    ]


@register(Tags.security, deploy=True)
def check_signing_key_is_strong(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """sandbox.E002: the tokens' signing key is not guessable."""
    signing_key = getattr(settings, "SPORTS_SANDBOX_SIGNING_KEY", "")
    weakness = secrets.weakness(str(signing_key or ""), min_length=SIGNING_KEY_MIN_LENGTH)
    if weakness is None:
        return []
    return [
        Error(
            f"SPORTS_SANDBOX_SIGNING_KEY {weakness}: whoever guesses it can forge tokens of any plan and mode.",
            hint=FIX,
            id="sandbox.E002",
        )
    ]
