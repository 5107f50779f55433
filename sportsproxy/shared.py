"""One SportsClient per process, built from settings and reused by every request.

A client owns a connection pool; building one per request would open a new TCP (and
TLS) connection to the service for every mint.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from sportsproxy import conf
from sportsproxy.client import SportsClient
from sportsproxy.transport import SandboxTransport

_client: SportsClient | None = None
_lock = threading.Lock()


def get_client() -> SportsClient:
    """The process's shared client (built on first use)."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = build_client()
    return _client


def build_client() -> SportsClient:
    """A new client from SPORTS_API_KEY, SPORTS_BASE_URL and SPORTS_TIMEOUT."""
    key = conf.api_key()
    if not key:
        raise ImproperlyConfigured("SPORTS_API_KEY is not set. Set it, or run `python manage.py demo_setup`.")
    try:
        if conf.base_url():
            return SportsClient(key, base_url=conf.base_url(), timeout=conf.timeout())
        return SportsClient(key, base_url=conf.SANDBOX_BASE_URL, timeout=conf.timeout(), transport=SandboxTransport())
    except ValueError as error:
        raise ImproperlyConfigured(f"SPORTS_API_KEY is not usable: {error}") from None


def get_previous_client() -> SportsClient | None:
    """The shared client calling with SPORTS_API_KEY_PREVIOUS (same pool), or None outside a rotation."""
    previous = conf.previous_api_key()
    if not previous:
        return None
    try:
        return get_client().with_api_key(previous)
    except ValueError as error:
        raise ImproperlyConfigured(f"SPORTS_API_KEY_PREVIOUS is not usable: {error}") from None


@receiver(setting_changed)
def _forget_client_on_settings_change(*, setting: str, **kwargs: Any) -> None:
    global _client
    if setting.startswith("SPORTS_") and _client is not None:
        with _lock:
            _client, stale = None, _client
        if stale is not None:
            stale.close()
