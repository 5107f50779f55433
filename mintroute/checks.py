"""System checks of the mint route: its settings (every problem `conf.problems()` finds), and,
with `check --deploy`, what production needs (shared rate-limit counters, a strong secret key)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.checks import CheckMessage, Error, Tags, register

from mintroute import conf


@register("mintroute")
def check_mint_route_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [problem.as_check_message() for problem in conf.problems()]


# The caches that live inside one process: with several workers each counts its own limits.
PER_PROCESS_CACHES = (LocMemCache, DummyCache)


@register(Tags.security, deploy=True)
def check_rate_limits_are_shared(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """mintroute.E006: in production the rate limits must live in a cache every process shares."""
    alias = getattr(settings, "RATELIMIT_USE_CACHE", "default")
    if settings.DEBUG or alias not in settings.CACHES:
        return []
    cache = caches[alias]
    if not isinstance(cache, PER_PROCESS_CACHES):
        return []
    return [
        Error(
            f"The cache the rate limits count in (CACHES[{alias!r}], {type(cache).__name__}) is kept by each "
            "process for itself, so with several workers every limit of the route multiplies by their number.",
            hint="Use a cache all processes share, such as Django's RedisCache (in the starter project: set "
            "REDIS_URL). A site that "
            'knows it runs one process can waive this with SILENCED_SYSTEM_CHECKS = ["mintroute.E006"].',
            id="mintroute.E006",
        )
    ]


SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_DISTINCT_CHARACTERS = 5


@register(Tags.security, deploy=True)
def check_secret_key_is_strong(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """mintroute.E007: the secret that signs sessions and the remembered-token cookie is long and varied."""
    secret_key = str(getattr(settings, "SECRET_KEY", ""))
    if len(secret_key) >= SECRET_KEY_MIN_LENGTH and len(set(secret_key)) >= SECRET_KEY_MIN_DISTINCT_CHARACTERS:
        return []
    return [
        Error(
            f"DJANGO_SECRET_KEY (the SECRET_KEY setting) is shorter than {SECRET_KEY_MIN_LENGTH} characters or has "
            f"fewer than {SECRET_KEY_MIN_DISTINCT_CHARACTERS} distinct ones: whoever guesses it can forge sessions "
            "and the route's remembered-token cookie.",
            hint="Set DJANGO_SECRET_KEY to a long random value, e.g. the output of "
            'python -c "import secrets; print(secrets.token_urlsafe(50))".',
            id="mintroute.E007",
        )
    ]
