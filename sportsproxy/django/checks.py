"""What is wrong with the SDK's settings, said once: `manage.py check` reports every problem,
and `shared.build_client()` refuses to build a client on the first one (so a misconfigured
site fails with the same sentence at its first request, never with a traceback).

No message ever quotes a key, not even a malformed one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured

from sportsproxy.django import conf
from sportsproxy.django.problems import Problem
from sportsproxy.service import API_KEY_FORMAT, API_KEY_PATTERN, RPC_PATH, origin_problem


def client_problems() -> list[Problem]:
    """Everything that keeps the shared client from being built, in the order to fix it."""
    return [*_key_problems(), *_connection_problems()]


def previous_key_problems() -> list[Problem]:
    previous = conf.previous_api_key()
    if previous and API_KEY_PATTERN.match(previous) is None:
        return [
            Problem(
                "sportsproxy.E005",
                "SPORTS_API_KEY_PREVIOUS",
                "SPORTS_API_KEY_PREVIOUS is malformed.",
                f"A key is {API_KEY_FORMAT}; remove the setting once the rotation is over.",
            )
        ]
    return []


@register("sportsproxy")
def check_sports_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [problem.as_check_message() for problem in [*client_problems(), *previous_key_problems()]]


TEST_KEY_PREFIX = "sk_test_"


@register(Tags.security, deploy=True)
def check_no_test_key_in_production(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """sportsproxy.W002: a test key with debug off. Only a warning: staging sites use test keys on purpose."""
    if settings.DEBUG or not conf.api_key().startswith(TEST_KEY_PREFIX):
        return []
    return [
        Warning(
            f"SPORTS_API_KEY is a test key ({TEST_KEY_PREFIX}...) and DEBUG is off: the service answers it with "
            "sandbox markets, not the production ones.",
            hint="In production set SPORTS_API_KEY to a live key (sk_live_...) from the dashboard; a staging site "
            'that means to use a test key can silence this with SILENCED_SYSTEM_CHECKS = ["sportsproxy.W002"].',
            id="sportsproxy.W002",
        )
    ]


def _key_problems() -> list[Problem]:
    key = conf.api_key()
    if not key and conf.transport() == "sandbox":
        return [
            Problem(
                "sportsproxy.W001",
                "SPORTS_API_KEY",
                "SPORTS_API_KEY is not set; the mint route cannot mint until it is.",
                "Run `python manage.py demo_setup` after `migrate`: it creates a sandbox key and writes it to .env.",
                warning_only=True,  # so that `migrate` can run before demo_setup writes the key
            )
        ]
    if not key:
        return [
            Problem(
                "sportsproxy.E001",
                "SPORTS_API_KEY",
                "SPORTS_API_KEY is not set, so the mint route cannot call the sports service.",
                "Set SPORTS_API_KEY in settings to your key from the service's dashboard.",
            )
        ]
    if API_KEY_PATTERN.match(key) is None:
        return [
            Problem(
                "sportsproxy.E002",
                "SPORTS_API_KEY",
                "SPORTS_API_KEY is malformed.",
                f"A key is {API_KEY_FORMAT}; copy it again from the dashboard.",
            )
        ]
    return []


def _connection_problems() -> list[Problem]:
    problems = []
    try:
        conf.timeout()
    except ImproperlyConfigured as error:
        problems.append(Problem("sportsproxy.E003", "SPORTS_TIMEOUT", str(error), "Set it to e.g. 5 (seconds)."))
    transport = conf.transport()
    if transport == "sandbox":
        if not conf.sandbox_installed():
            problems.append(
                Problem(
                    "sportsproxy.E007",
                    "SPORTS_TRANSPORT",
                    f"SPORTS_TRANSPORT is 'sandbox' but {conf.SANDBOX_APP!r} is not in INSTALLED_APPS.",
                    "Set SPORTS_TRANSPORT = 'http' and SPORTS_BASE_URL to the service's address, "
                    f"or install the sandbox (extra `sandbox`) and add {conf.SANDBOX_APP!r} to INSTALLED_APPS.",
                )
            )
        return problems
    if transport not in conf.TRANSPORTS:
        problems.append(
            Problem(
                "sportsproxy.E008",
                "SPORTS_TRANSPORT",
                f"SPORTS_TRANSPORT must be one of {', '.join(conf.TRANSPORTS)}; got {transport!r}.",
                "Leave it unset (http) to call the service at SPORTS_BASE_URL.",
            )
        )
        return problems
    base_url = conf.base_url()
    if not base_url:
        problems.append(
            Problem(
                "sportsproxy.E006",
                "SPORTS_BASE_URL",
                "SPORTS_BASE_URL is not set, so the SDK does not know where the sports service is.",
                "Set SPORTS_BASE_URL to the service's address, e.g. https://api.example.com "
                "(or, with the embedded sandbox installed, SPORTS_TRANSPORT = 'sandbox').",
            )
        )
    elif (not_an_origin := origin_problem(base_url)) is not None:
        problems.append(
            Problem(
                "sportsproxy.E004",
                "SPORTS_BASE_URL",
                f"SPORTS_BASE_URL {not_an_origin}.",
                f"For example https://api.example.com; the SDK adds the RPC path ({RPC_PATH}) itself.",
            )
        )
    return problems
