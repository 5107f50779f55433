"""The mint route's settings, read at call time (so `override_settings` applies in tests).

| setting | default | meaning |
| --- | --- | --- |
| SPORTS_TOKEN_TTL | 600 | seconds each minted token lives (60..86400) |
| SPORTS_TOKEN_RATE | "10/m" | django-ratelimit rate, applied per user and per client IP |
| SPORTS_TOKEN_PERMISSION | "mintroute.permissions.is_active_user" | callable (request) -> bool, or its dotted path |
| SPORTS_TRUSTED_PROXY_COUNT | 0 | proxies in front of Django that append to X-Forwarded-For |
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest
from django.utils.module_loading import import_string

TTL_MIN, TTL_MAX = 60, 86400

Permission = Callable[[HttpRequest], bool]


def token_ttl() -> int:
    ttl = getattr(settings, "SPORTS_TOKEN_TTL", 600)
    return int(ttl)


def token_rate() -> str:
    return str(getattr(settings, "SPORTS_TOKEN_RATE", "10/m"))


def permission() -> Permission:
    hook = getattr(settings, "SPORTS_TOKEN_PERMISSION", "mintroute.permissions.is_active_user")
    resolved: Permission = import_string(hook) if isinstance(hook, str) else hook
    return resolved


def trusted_proxy_count() -> int:
    return int(getattr(settings, "SPORTS_TRUSTED_PROXY_COUNT", 0))
