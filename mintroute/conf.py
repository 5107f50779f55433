"""The mint route's settings: one reader per setting, read at call time (so `override_settings`
applies), and `problems()`, the one list of what is wrong with them.

`manage.py check` reports that list (checks.py); at run time each reader raises SettingsError with
the same sentence, so a site that skipped `check` still gets a clear answer, never a 500.
docs/settings.md is the reference for every setting of the project.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import ipaddress
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import models
from django.http import HttpRequest
from django.utils.module_loading import import_string
from django_ratelimit.core import rate_re

from sportsproxy.django.problems import Problem, SettingsError, problems_of
from sportsproxy.extras import install_hint
from sportsproxy.service import TTL_DEFAULT, TTL_MAX, TTL_MIN, validate_ttl

Permission = Callable[[HttpRequest], bool]

DEFAULT_RATE = "10/m"
DEFAULT_PERMISSION = "mintroute.permissions.is_active_user"
DEFAULT_AUTHENTICATION = ("mintroute.authentication.SessionAuthentication",)
SHARING_MODES = ("login", "site")
DEFAULT_TRUSTED_PROXIES = ("127.0.0.0/8", "::1")  # the loopback networks: a proxy on the same machine

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

TTL = Problem(
    "mintroute.E001",
    "SPORTS_TOKEN_TTL",
    f"SPORTS_TOKEN_TTL must be an integer from {TTL_MIN} to {TTL_MAX} seconds.",
    f"{TTL_DEFAULT} (ten minutes) is a balanced default; the browser refreshes before expiry.",
)
RATE = Problem(
    "mintroute.E002",
    "SPORTS_TOKEN_RATE",
    "SPORTS_TOKEN_RATE is not a django-ratelimit rate.",
    'Write it as count/period, e.g. "10/m", "100/h" or "5/10s".',
)
PERMISSION = Problem(
    "mintroute.E003",
    "SPORTS_TOKEN_PERMISSION",
    "SPORTS_TOKEN_PERMISSION is not a callable (request) -> bool, or its dotted path does not import.",
    "Use e.g. 'myapp.permissions.can_use_sports_data', or remove the setting for any active user.",
)
PROXIES = Problem(
    "mintroute.E004",
    "SPORTS_TRUSTED_PROXY_COUNT",
    "SPORTS_TRUSTED_PROXY_COUNT must be a whole number (0 when Django faces clients directly).",
    "Set it to the number of proxies in front of Django that append to X-Forwarded-For.",
)
TRUSTED_PROXIES = Problem(
    "mintroute.E004",
    "SPORTS_TRUSTED_PROXIES",
    'SPORTS_TRUSTED_PROXIES must be a list of IP addresses or networks (CIDR), e.g. "10.0.0.5, 10.1.0.0/16".',
    "List the addresses your proxies connect to Django from; the default is the loopback networks.",
)
AUTHENTICATION = Problem(
    "mintroute.E005",
    "SPORTS_TOKEN_AUTHENTICATION",
    "SPORTS_TOKEN_AUTHENTICATION must be a list of dotted paths of DRF authentication classes that import.",
    'For example ["mintroute.authentication.SessionAuthentication", '
    '"rest_framework.authentication.TokenAuthentication"].',
)
SHARING = Problem(
    "mintroute.E008",
    "SPORTS_TOKEN_SHARING",
    'SPORTS_TOKEN_SHARING must be "login" or "site".',
    '"login" (the default) gives each login its own token; "site" gives every caller the site\'s one token.',
)

AUTHENTICATION_APPS_ID = "mintroute.E010"


def token_ttl() -> int:
    """SPORTS_TOKEN_TTL: whole seconds within the service's bounds (the SDK owns the rule)."""
    try:
        return validate_ttl(getattr(settings, "SPORTS_TOKEN_TTL", TTL_DEFAULT))
    except ValueError:
        raise SettingsError(TTL) from None


def token_rate() -> str:
    """SPORTS_TOKEN_RATE: the django-ratelimit rate applied per user and per client IP."""
    rate = getattr(settings, "SPORTS_TOKEN_RATE", DEFAULT_RATE)
    if not isinstance(rate, str) or not rate_re.fullmatch(rate):
        raise SettingsError(RATE)
    return rate


def permission() -> Permission:
    """SPORTS_TOKEN_PERMISSION: a callable, or the dotted path of one."""
    hook = getattr(settings, "SPORTS_TOKEN_PERMISSION", DEFAULT_PERMISSION)
    try:
        resolved = import_string(hook) if isinstance(hook, str) else hook
    except ImportError:
        raise SettingsError(PERMISSION) from None
    if not callable(resolved):
        raise SettingsError(PERMISSION)
    return resolved  # type: ignore[no-any-return]


def trusted_proxy_count() -> int:
    """SPORTS_TRUSTED_PROXY_COUNT: how many proxies append to X-Forwarded-For."""
    raw = getattr(settings, "SPORTS_TRUSTED_PROXY_COUNT", 0)
    try:
        count = int(raw)
    except (TypeError, ValueError):
        raise SettingsError(PROXIES) from None
    if count < 0 or isinstance(raw, bool | float):
        raise SettingsError(PROXIES)
    return count


def trusted_proxies() -> tuple[IPNetwork, ...]:
    """SPORTS_TRUSTED_PROXIES: the peers whose X-Forwarded-For is read (a list, or one comma-separated string)."""
    listed = getattr(settings, "SPORTS_TRUSTED_PROXIES", DEFAULT_TRUSTED_PROXIES)
    if isinstance(listed, str):
        listed = listed.split(",")
    if not isinstance(listed, Sequence) or not all(isinstance(entry, str) for entry in listed):
        raise SettingsError(TRUSTED_PROXIES)
    return _networks(tuple(entry.strip() for entry in listed if entry.strip()))


@cache
def _networks(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    try:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)
    except ValueError:
        raise SettingsError(TRUSTED_PROXIES) from None


def authentication_classes() -> tuple[type[Any], ...]:
    """SPORTS_TOKEN_AUTHENTICATION: the DRF authentication classes, imported once per list."""
    paths = getattr(settings, "SPORTS_TOKEN_AUTHENTICATION", DEFAULT_AUTHENTICATION)
    if isinstance(paths, str) or not isinstance(paths, Sequence) or not paths:
        raise SettingsError(AUTHENTICATION)
    if not all(isinstance(path, str) for path in paths):
        raise SettingsError(AUTHENTICATION)
    return _import_classes(tuple(paths))


@cache
def _import_classes(paths: tuple[str, ...]) -> tuple[type[Any], ...]:
    try:
        classes = tuple(import_string(path) for path in paths)
    except ImportError:
        raise SettingsError(AUTHENTICATION) from None
    if not all(isinstance(cls, type) and callable(getattr(cls, "authenticate", None)) for cls in classes):
        raise SettingsError(AUTHENTICATION)
    return classes


def authentication_apps() -> tuple[type[Any], ...]:
    """SPORTS_TOKEN_AUTHENTICATION's classes, once every model they read belongs to an installed app.

    DRF's TokenAuthentication reads `rest_framework.authtoken`'s Token: without that app in
    INSTALLED_APPS the model is abstract and every call would fail (`'Token' has no attribute
    'objects'`). The models a class reads are its `model` attribute, what its `get_model()` returns
    and the models its modules import.
    """
    classes = authentication_classes()
    for cls in classes:
        for model in _models_read_by(cls):
            app = _missing_app(model)
            if app is not None:
                raise SettingsError(_missing_app_problem(cls, model, app))
    return classes


def _missing_app_problem(cls: type[Any], model: type[models.Model], app: str) -> Problem:
    return Problem(
        AUTHENTICATION_APPS_ID,
        "SPORTS_TOKEN_AUTHENTICATION",
        f"SPORTS_TOKEN_AUTHENTICATION lists {cls.__module__}.{cls.__qualname__}, which reads the model "
        f"{model.__module__}.{model.__qualname__}, but its app {app!r} is not in INSTALLED_APPS.",
        f'Add "{app}" to INSTALLED_APPS and run manage.py migrate, or remove the class from the setting.',
    )


def _models_read_by(cls: type[Any]) -> tuple[type[models.Model], ...]:
    if cls not in _MODELS_READ:
        _MODELS_READ[cls] = _find_models_read_by(cls)
    return _MODELS_READ[cls]


_MODELS_READ: dict[type[Any], tuple[type[models.Model], ...]] = {}


def _find_models_read_by(cls: type[Any]) -> tuple[type[models.Model], ...]:
    found: list[object] = [getattr(cls, "model", None)]
    get_model = getattr(cls, "get_model", None)
    if callable(get_model):
        with contextlib.suppress(Exception):  # a class that cannot say its model is judged by its modules
            found.append(get_model(cls()))
    for klass in cls.__mro__:
        module = inspect.getmodule(klass)
        found.extend(vars(module).values() if module is not None else ())
    unique = dict.fromkeys(obj for obj in found if isinstance(obj, type) and issubclass(obj, models.Model))
    return tuple(unique)


def _missing_app(model: type[models.Model]) -> str | None:
    """The app `model` belongs to when that app is not installed; None when it is."""
    if not model._meta.abstract:
        return None if model._meta.app_label in apps.app_configs else model._meta.app_label
    module = model.__module__
    if module.endswith(".models") or ".models." in module:  # an app's models module: the app is the package
        package = module[: module.rindex(".models")]
        return None if apps.is_installed(package) else package
    return None  # an abstract base class by design (e.g. AbstractUser), read through subclasses


def token_sharing() -> str:
    """SPORTS_TOKEN_SHARING: "login" (a token per login) or "site" (one token for every caller)."""
    mode = getattr(settings, "SPORTS_TOKEN_SHARING", SHARING_MODES[0])
    if mode not in SHARING_MODES:
        raise SettingsError(SHARING)
    return str(mode)


READERS = (
    token_ttl,
    token_rate,
    permission,
    trusted_proxy_count,
    trusted_proxies,
    authentication_apps,
    token_sharing,
)


def problems() -> list[Problem]:
    """Every wrong setting of the route, in the order of READERS."""
    return problems_of(READERS)


# --- Operating the route: /metrics (mintroute.metrics) ---------------------------------------------

DEFAULT_METRICS_ALLOW = ("127.0.0.0/8", "::1")  # loopback: a Prometheus on the same machine

METRICS_ALLOW = Problem(
    "mintroute.E020",
    "SPORTS_METRICS_ALLOW",
    "SPORTS_METRICS_ALLOW must be a list of IP addresses or CIDR networks.",
    'For example ["127.0.0.0/8", "::1", "10.0.0.0/8"] (the default is the loopback networks).',
)
METRICS_LIBRARY = Problem(
    "mintroute.E021",
    "SPORTS_METRICS",
    "SPORTS_METRICS is on, but prometheus_client is not installed, so /metrics cannot answer.",
    f"Install {install_hint('metrics', 'prometheus-client')}; or turn SPORTS_METRICS off.",
)


def metrics_enabled() -> bool:
    """SPORTS_METRICS: count the route's answers and serve them at /metrics (off by default)."""
    if not getattr(settings, "SPORTS_METRICS", False):
        return False
    if importlib.util.find_spec("prometheus_client") is None:
        raise SettingsError(METRICS_LIBRARY)
    return True


def metrics_allow() -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """SPORTS_METRICS_ALLOW: the networks whose addresses may read /metrics without the token."""
    raw = getattr(settings, "SPORTS_METRICS_ALLOW", DEFAULT_METRICS_ALLOW)
    if isinstance(raw, str):
        raw = [each for each in raw.split(",") if each.strip()]
    if not isinstance(raw, Sequence) or not all(isinstance(each, str) for each in raw):
        raise SettingsError(METRICS_ALLOW)
    try:
        return tuple(ipaddress.ip_network(each.strip(), strict=False) for each in raw)
    except ValueError:
        raise SettingsError(METRICS_ALLOW) from None


def metrics_token() -> str:
    """SPORTS_METRICS_TOKEN: a bearer token that reads /metrics from any address ("" for none)."""
    return str(getattr(settings, "SPORTS_METRICS_TOKEN", "") or "")


OPERATIONS_READERS = (metrics_enabled, metrics_allow)


def operations_problems() -> list[Problem]:
    """What is wrong with the settings of /metrics (checked apart from the route's own READERS)."""
    return problems_of(OPERATIONS_READERS)
