"""System checks of the mint route: its settings (every problem `conf.problems()` finds), "site"
mode's shared token, and, with `check --deploy`, what production needs (shared rate-limit counters,
a secret key nobody can guess)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.filebased import FileBasedCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured

from mintroute import conf
from sportsproxy.django import secrets
from sportsproxy.django.naming import named, silencing, variable_of


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
            hint="Use a cache all processes share, such as Django's RedisCache"
            + (f" (here: set {variable_of('CACHES')})" if variable_of("CACHES") else "")
            + f". A site that knows it runs one process can waive this with {silencing('mintroute.E006')}.",
            id="mintroute.E006",
        )
    ]


# The caches a single flight cannot span: a file cache is one machine's, and its `add` is not atomic.
UNSHARED_CACHES = (*PER_PROCESS_CACHES, FileBasedCache)


@register("mintroute")
def check_site_token_is_shared(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """mintroute.W011 (debug on): "site" mode keeps the site's token in a cache the processes do not share."""
    return _unshared_site_token(Warning, "mintroute.W011") if settings.DEBUG else []


@register(Tags.security, deploy=True)
def check_site_token_is_shared_in_production(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """mintroute.E011: check_site_token_is_shared as `check --deploy` sees it, an error whatever DEBUG says."""
    return _unshared_site_token(Error, "mintroute.E011")


def _unshared_site_token(level: type[Warning] | type[Error], check_id: str) -> list[CheckMessage]:
    try:
        shared = conf.token_sharing() == "site"
    except ImproperlyConfigured:
        return []  # mintroute.E008 reports the setting
    alias = getattr(settings, "RATELIMIT_USE_CACHE", "default")
    if not shared or alias not in settings.CACHES:
        return []
    cache = caches[alias]
    if not isinstance(cache, UNSHARED_CACHES):
        return []
    return [
        level(
            f'SPORTS_TOKEN_SHARING is "site", but the cache that holds the site\'s token (CACHES[{alias!r}], '
            f"{type(cache).__name__}) is not shared between processes: each process would mint its own token, "
            "and the single flight would hold in one process only.",
            hint="Use a cache all processes share, such as Django's RedisCache (in this project: set "
            'REDIS_URL), or SPORTS_TOKEN_SHARING = "login".',
            id=check_id,
        )
    ]


SECRET_KEY_MIN_LENGTH = 50
INSECURE_PREFIX = "django-insecure-"  # what startproject writes: a key that was never meant to serve


def secret_key_weakness(secret_key: str) -> str | None:
    """Why the site's SECRET_KEY is guessable (the shared rules, plus startproject's prefix), or None."""
    if secret_key.casefold().startswith(INSECURE_PREFIX):
        return f"starts with {INSECURE_PREFIX!r} (the development key startproject writes)"
    return secrets.weakness(secret_key, min_length=SECRET_KEY_MIN_LENGTH)


@register(Tags.security, deploy=True)
def check_secret_key_is_strong(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """mintroute.E007: the secret that signs sessions and the remembered-token cookie is not guessable."""
    weakness = secret_key_weakness(str(getattr(settings, "SECRET_KEY", "")))
    if weakness is None:
        return []
    return [
        Error(
            f"{named('SECRET_KEY')} {weakness}: whoever guesses it can forge sessions "
            "and the route's remembered-token cookie.",
            hint=f"Set {variable_of('SECRET_KEY') or 'SECRET_KEY'} to a long random value, e.g. the output of "
            'python -c "import secrets; print(secrets.token_hex(32))".',
            id="mintroute.E007",
        )
    ]


@register("mintroute")
def check_operations_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """mintroute.E020, E021: the settings of /metrics (docs/operations.md)."""
    return [problem.as_check_message() for problem in conf.operations_problems()]
