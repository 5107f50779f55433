"""One SportsClient per process, built from settings and reused by every request.

A client owns a connection pool; building one per request would open a new TCP (and
TLS) connection to the service for every mint.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
from django.core.signals import setting_changed
from django.dispatch import receiver

from sportsproxy.client import SportsClient
from sportsproxy.django import conf
from sportsproxy.django.checks import SettingsError, client_problems, previous_key_problems

_client: SportsClient | None = None
_lock = threading.Lock()


def get_client() -> SportsClient:
    """The process's shared client (built on first use); SettingsError if the settings cannot build one."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = build_client()
    return _client


def build_client() -> SportsClient:
    """A new client from SPORTS_API_KEY, SPORTS_TRANSPORT, SPORTS_BASE_URL and SPORTS_TIMEOUT."""
    problems = client_problems()
    if problems:
        raise SettingsError(problems[0])
    base_url, transport = _connection()
    return SportsClient(conf.api_key(), base_url=base_url, timeout=conf.timeout(), transport=transport)


def get_previous_client() -> SportsClient | None:
    """The shared client calling with SPORTS_API_KEY_PREVIOUS (same pool), or None outside a rotation."""
    previous = conf.previous_api_key()
    if not previous:
        return None
    problems = previous_key_problems()
    if problems:
        raise SettingsError(problems[0])
    return get_client().with_api_key(previous)


def _connection() -> tuple[str, httpx.BaseTransport | None]:
    if conf.transport() == "sandbox":
        from sportsproxy.sandbox.transport import SandboxTransport  # only when selected (and installed)

        return conf.SANDBOX_BASE_URL, SandboxTransport()
    return conf.base_url(), None


@receiver(setting_changed)
def _forget_client_on_settings_change(*, setting: str, **kwargs: Any) -> None:
    global _client
    if setting.startswith("SPORTS_") and _client is not None:
        with _lock:
            _client, stale = None, _client
        if stale is not None:
            stale.close()
