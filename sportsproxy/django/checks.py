"""System checks of the SDK's settings: they report what `conf.problems()` finds (the readers own
the rules and the sentences), and, with `check --deploy`, a test key on a production site."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, register

from sportsproxy.django import conf
from sportsproxy.django.naming import silencing
from sportsproxy.django.problems import Problem

TEST_KEY_PREFIX = "sk_test_"


def warning_for_a_test_key() -> Problem:
    """sportsproxy.W002's sentence, its hint naming how this site silences it."""
    return Problem(
        "sportsproxy.W002",
        "SPORTS_API_KEY",
        f"SPORTS_API_KEY is a test key ({TEST_KEY_PREFIX}...) and DEBUG is off: the service answers it with "
        "sandbox markets, not the production ones.",
        "In production set SPORTS_API_KEY to a live key (sk_live_...) from the dashboard; a staging site "
        f"that means to use a test key can silence this with {silencing('sportsproxy.W002')}.",
        warning_only=True,  # staging sites use test keys on purpose
    )


@register("sportsproxy")
def check_sports_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [problem.as_check_message() for problem in conf.problems()]


@register(Tags.security, deploy=True)
def check_no_test_key_in_production(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """sportsproxy.W002: a test key with debug off."""
    key = str(getattr(settings, "SPORTS_API_KEY", "") or "")  # a malformed or missing key is E001/E002's
    if settings.DEBUG or not key.startswith(TEST_KEY_PREFIX):
        return []
    return [warning_for_a_test_key().as_check_message()]
