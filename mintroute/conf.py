"""The mint route's settings, read at call time (so `override_settings` applies in tests).

Each function below reads one setting and names its default; docs/settings.md is the
reference for every setting of the project.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.utils.module_loading import import_string

from sportsproxy.service import TTL_DEFAULT, TTL_MAX, TTL_MIN

Permission = Callable[[HttpRequest], bool]


def token_ttl() -> int:
    """SPORTS_TOKEN_TTL: ImproperlyConfigured unless it is a whole number of seconds in the service's bounds."""
    ttl = getattr(settings, "SPORTS_TOKEN_TTL", TTL_DEFAULT)
    if type(ttl) is not int or not TTL_MIN <= ttl <= TTL_MAX:
        raise ImproperlyConfigured(f"SPORTS_TOKEN_TTL must be an integer from {TTL_MIN} to {TTL_MAX} seconds.")
    return ttl


def token_rate() -> str:
    return str(getattr(settings, "SPORTS_TOKEN_RATE", "10/m"))


def permission() -> Permission:
    hook = getattr(settings, "SPORTS_TOKEN_PERMISSION", "mintroute.permissions.is_active_user")
    resolved: Permission = import_string(hook) if isinstance(hook, str) else hook
    return resolved


def trusted_proxy_count() -> int:
    return int(getattr(settings, "SPORTS_TRUSTED_PROXY_COUNT", 0))
