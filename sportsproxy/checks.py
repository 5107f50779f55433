"""System checks (`manage.py check`) for the SDK's settings: misconfiguration shows before the first request."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Warning, register
from django.core.exceptions import ImproperlyConfigured

from sportsproxy import conf
from sportsproxy.client import API_KEY_PATTERN

FORMAT_HINT = "A key is sk_live_ or sk_test_ followed by at least 32 url-safe characters (see the dashboard)."


@register("sportsproxy")
def check_sports_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    key = conf.api_key()
    if not key and conf.base_url():
        messages.append(
            Error(
                "SPORTS_API_KEY is not set, so the mint route cannot reach SPORTS_BASE_URL.",
                hint="Set SPORTS_API_KEY to your key from the service's dashboard.",
                id="sportsproxy.E001",
            )
        )
    elif not key:
        messages.append(
            Warning(
                "SPORTS_API_KEY is not set; the mint route cannot mint until it is.",
                hint="Run `python manage.py demo_setup` after `migrate`: it creates a key and writes it to .env.",
                id="sportsproxy.W001",
            )
        )
    elif API_KEY_PATTERN.match(key) is None:
        # The message never quotes the value: it is a secret even when malformed.
        messages.append(Error("SPORTS_API_KEY is malformed.", hint=FORMAT_HINT, id="sportsproxy.E002"))
    previous = conf.previous_api_key()
    if previous and API_KEY_PATTERN.match(previous) is None:
        messages.append(Error("SPORTS_API_KEY_PREVIOUS is malformed.", hint=FORMAT_HINT, id="sportsproxy.E005"))
    try:
        conf.timeout()
    except ImproperlyConfigured as error:
        messages.append(Error(str(error), hint="Set SPORTS_TIMEOUT to e.g. 5 (seconds).", id="sportsproxy.E003"))
    if conf.base_url() and not conf.base_url().startswith(("http://", "https://")):
        messages.append(
            Error(
                "SPORTS_BASE_URL must be an http:// or https:// address.",
                hint="For example https://api.example.com, or leave it unset to use the embedded sandbox.",
                id="sportsproxy.E004",
            )
        )
    return messages
