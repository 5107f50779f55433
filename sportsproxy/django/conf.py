"""The SDK's Django settings: one reader per setting, read at call time (so `override_settings`
applies), each returning the checked value or raising SettingsError with the setting's `Problem`;
and `problems()`, the one list of what is wrong with them.

`manage.py check` reports that list (checks.py); `shared` builds the client through the same
readers, so a site that skipped `check` gets the same sentence at its first mint. No sentence ever
quotes a key. docs/settings.md is the reference for every setting of the project.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from django.apps import apps
from django.conf import settings

from sportsproxy.django.problems import Problem, SettingsError, problems_of
from sportsproxy.service import RPC_PATH, api_key_problem, origin_problem

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


MISSING_KEY_SANDBOX = Problem(
    "sportsproxy.W001",
    "SPORTS_API_KEY",
    "SPORTS_API_KEY is not set; the mint route cannot mint until it is.",
    "After `migrate`, create a sandbox key (`python manage.py sandbox_key create --account NAME`) and set "
    "SPORTS_API_KEY to it, in the environment or .env.",
    warning_only=True,  # so that `migrate` can run before a key exists
)
MISSING_KEY = Problem(
    "sportsproxy.E001",
    "SPORTS_API_KEY",
    "SPORTS_API_KEY is not set, so the mint route cannot call the sports service.",
    "Set SPORTS_API_KEY in settings to your key from the service's dashboard.",
)
MISSING_BASE_URL = Problem(
    "sportsproxy.E006",
    "SPORTS_BASE_URL",
    "SPORTS_BASE_URL is not set, so the SDK does not know where the sports service is.",
    "Set SPORTS_BASE_URL to the service's address, e.g. https://api.example.com "
    "(or, with the embedded sandbox installed, SPORTS_TRANSPORT = 'sandbox').",
)
SANDBOX_NOT_INSTALLED = Problem(
    "sportsproxy.E007",
    "SPORTS_TRANSPORT",
    f"SPORTS_TRANSPORT is 'sandbox' but {SANDBOX_APP!r} is not in INSTALLED_APPS.",
    "Set SPORTS_TRANSPORT = 'http' and SPORTS_BASE_URL to the service's address, "
    f"or install the sandbox (extra `sandbox`) and add {SANDBOX_APP!r} to INSTALLED_APPS.",
)


def api_key() -> str:
    """SPORTS_API_KEY: the site's key (sk_live_... or sk_test_...)."""
    key = str(getattr(settings, "SPORTS_API_KEY", "") or "")
    if not key:
        raise SettingsError(MISSING_KEY_SANDBOX if _transport_setting() == "sandbox" else MISSING_KEY)
    if (malformed := api_key_problem(key)) is not None:
        raise SettingsError(
            Problem(
                "sportsproxy.E002",
                "SPORTS_API_KEY",
                f"SPORTS_API_KEY {malformed}.",
                "Copy it again from the dashboard.",
            )
        )
    return key


def previous_api_key() -> str:
    """SPORTS_API_KEY_PREVIOUS: during a rotation, the key being replaced ("" outside a rotation)."""
    previous = str(getattr(settings, "SPORTS_API_KEY_PREVIOUS", "") or "")
    if previous and (malformed := api_key_problem(previous)) is not None:
        raise SettingsError(
            Problem(
                "sportsproxy.E005",
                "SPORTS_API_KEY_PREVIOUS",
                f"SPORTS_API_KEY_PREVIOUS {malformed}.",
                "Copy it again from the dashboard; remove the setting once the rotation is over.",
            )
        )
    return previous


def timeout() -> float:
    """SPORTS_TIMEOUT in seconds: a number above 0 and at most 300."""
    raw = getattr(settings, "SPORTS_TIMEOUT", 5)
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0 < seconds <= 300:  # also refuses NaN
        raise SettingsError(
            Problem(
                "sportsproxy.E003",
                "SPORTS_TIMEOUT",
                f"SPORTS_TIMEOUT must be a number of seconds above 0 and at most 300; got {raw!r}.",
                "Set it to e.g. 5 (seconds).",
            )
        )
    return seconds


def transport() -> str:
    """SPORTS_TRANSPORT: how the service is reached, "http" (SPORTS_BASE_URL) or "sandbox" (in-process,
    with the sandbox app installed)."""
    name = _transport_setting()
    if name not in TRANSPORTS:
        raise SettingsError(
            Problem(
                "sportsproxy.E008",
                "SPORTS_TRANSPORT",
                f"SPORTS_TRANSPORT must be one of {', '.join(TRANSPORTS)}; got {name!r}.",
                "Leave it unset (http) to call the service at SPORTS_BASE_URL.",
            )
        )
    if name == "sandbox" and not apps.is_installed(SANDBOX_APP):
        raise SettingsError(SANDBOX_NOT_INSTALLED)
    return name


def base_url() -> str:
    """SPORTS_BASE_URL: the service's origin, required when SPORTS_TRANSPORT is "http" ("" otherwise);
    the SDK client drops its optional trailing slash."""
    if transport() != "http":
        return ""
    url = str(getattr(settings, "SPORTS_BASE_URL", "") or "")
    if not url:
        raise SettingsError(MISSING_BASE_URL)
    if (not_an_origin := origin_problem(url)) is not None:
        raise SettingsError(
            Problem(
                "sportsproxy.E004",
                "SPORTS_BASE_URL",
                f"SPORTS_BASE_URL {not_an_origin}.",
                f"For example https://api.example.com; the SDK adds the RPC path ({RPC_PATH}) itself.",
            )
        )
    return url


def _transport_setting() -> str:
    return str(getattr(settings, "SPORTS_TRANSPORT", "http"))


READERS = (api_key, timeout, transport, base_url, previous_api_key)  # in the order to fix them


def problems() -> list[Problem]:
    """Every wrong setting of the SDK, in the order of READERS, each once."""
    return problems_of(READERS)
