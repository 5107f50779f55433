"""The SDK's Django settings, read at call time (so tests and `override_settings` apply).

Each function below reads one setting and names its default; docs/settings.md is the
reference for every setting of the project.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

TRANSPORTS = ("http", "sandbox")
SANDBOX_APP = "sportsproxy.sandbox"
SANDBOX_BASE_URL = "http://sandbox.invalid"  # never resolved: the in-process transport answers

# In-process transports by SPORTS_TRANSPORT name, registered by the app that provides one (the
# sandbox's AppConfig.ready registers "sandbox"): the glue never imports the sandbox.
TransportFactory = Callable[[], object]
_TRANSPORT_FACTORIES: dict[str, TransportFactory] = {}


def register_transport(name: str, factory: TransportFactory) -> None:
    """Make SPORTS_TRANSPORT = `name` build its httpx2 transport (sync and async) with `factory()`."""
    _TRANSPORT_FACTORIES[name] = factory


def transport_factory(name: str) -> TransportFactory | None:
    """The factory registered under `name`, or None."""
    return _TRANSPORT_FACTORIES.get(name)


def api_key() -> str:
    return str(getattr(settings, "SPORTS_API_KEY", "") or "")


def previous_api_key() -> str:
    """SPORTS_API_KEY_PREVIOUS: during a rotation, the key being replaced."""
    return str(getattr(settings, "SPORTS_API_KEY_PREVIOUS", "") or "")


def base_url() -> str:
    """The upstream origin as set ("" when unset); the SDK client drops its optional trailing slash."""
    return str(getattr(settings, "SPORTS_BASE_URL", "") or "")


def transport() -> str:
    """How the service is reached: "http" (SPORTS_BASE_URL) or "sandbox" (in-process)."""
    return str(getattr(settings, "SPORTS_TRANSPORT", "http"))


def sandbox_installed() -> bool:
    return apps.is_installed(SANDBOX_APP)


def timeout() -> float:
    """SPORTS_TIMEOUT in seconds: a positive number."""
    raw = getattr(settings, "SPORTS_TIMEOUT", 5)
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0 < seconds <= 300:  # also refuses NaN
        raise ImproperlyConfigured(f"SPORTS_TIMEOUT must be a number of seconds above 0 and at most 300; got {raw!r}.")
    return seconds
