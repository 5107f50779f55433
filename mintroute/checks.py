"""System checks for the mint route's settings: wrong values fail `manage.py check`, not a request."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register
from django.core.exceptions import ImproperlyConfigured
from django_ratelimit.core import rate_re

from mintroute import conf


@register("mintroute")
def check_mint_route_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    try:
        conf.token_ttl()
    except ImproperlyConfigured as error:
        messages.append(
            Error(
                str(error),
                hint="600 (ten minutes) is a balanced default; the browser refreshes before expiry.",
                id="mintroute.E001",
            )
        )
    if not rate_re.fullmatch(conf.token_rate()):
        messages.append(
            Error(
                "SPORTS_TOKEN_RATE is not a django-ratelimit rate.",
                hint='Write it as count/period, e.g. "10/m", "100/h" or "5/10s".',
                id="mintroute.E002",
            )
        )
    try:
        hook = conf.permission()
        hook_ok = callable(hook)
    except ImportError:
        hook_ok = False
    if not hook_ok:
        messages.append(
            Error(
                "SPORTS_TOKEN_PERMISSION is not a callable (request) -> bool, or its dotted path does not import.",
                hint="Use e.g. 'myapp.permissions.can_use_sports_data', or remove the setting for any active user.",
                id="mintroute.E003",
            )
        )
    try:
        proxies_ok = conf.trusted_proxy_count() >= 0
    except (TypeError, ValueError):
        proxies_ok = False
    if not proxies_ok:
        messages.append(
            Error(
                "SPORTS_TRUSTED_PROXY_COUNT must be a whole number (0 when Django faces clients directly).",
                hint="Set it to the number of proxies in front of Django that append to X-Forwarded-For.",
                id="mintroute.E004",
            )
        )
    return messages
