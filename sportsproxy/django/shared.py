"""One SportsClient per process, and one AsyncSportsClient per event loop, built from settings
and reused by every request.

A client owns a connection pool; building one per request would open a new TCP (and
TLS) connection to the service for every mint. An async pool belongs to the event loop that
opened its connections, hence one async client per loop (one in a uvicorn worker).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from sportsproxy.client import AsyncSportsClient, SportsClient
from sportsproxy.django import conf

_client: SportsClient | None = None
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncSportsClient] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def get_client() -> SportsClient:
    """The process's shared client (built on first use); SettingsError (one setting's Problem) if the
    settings cannot build one."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = build_client()
    return _client


def build_client() -> SportsClient:
    """A new client from SPORTS_API_KEY, SPORTS_TRANSPORT, SPORTS_BASE_URL and SPORTS_TIMEOUT."""
    return SportsClient(**_client_arguments())


def get_async_client() -> AsyncSportsClient:
    """The running event loop's shared async client (built on first use); SettingsError as above."""
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = _async_clients[loop] = AsyncSportsClient(**_client_arguments())
    return client


def get_previous_client() -> SportsClient | None:
    """The shared client calling with SPORTS_API_KEY_PREVIOUS (same pool), or None outside a rotation."""
    previous = _previous_key()
    return None if previous is None else get_client().with_api_key(previous)


def get_previous_async_client() -> AsyncSportsClient | None:
    """get_previous_client's async twin, on the running loop's pool."""
    previous = _previous_key()
    return None if previous is None else get_async_client().with_api_key(previous)


def _client_arguments() -> dict[str, Any]:
    """The client's arguments, read by the settings' readers: SettingsError on the first wrong setting
    (the sentence `manage.py check` prints), in the order `conf.problems()` lists them."""
    api_key, timeout, base_url = conf.api_key(), conf.timeout(), conf.base_url()
    factory = conf.transport_factory(conf.transport())
    if factory is not None:  # an in-process transport (the sandbox registers one): no network hop
        return {"api_key": api_key, "base_url": conf.SANDBOX_BASE_URL, "timeout": timeout, "transport": factory()}
    return {"api_key": api_key, "base_url": base_url, "timeout": timeout, "transport": None}


def _previous_key() -> str | None:
    return conf.previous_api_key() or None


@receiver(setting_changed)
def _forget_client_on_settings_change(*, setting: str, **kwargs: Any) -> None:
    global _client
    if setting.startswith("SPORTS_"):
        _async_clients.clear()  # dropped, not closed: each belongs to a loop that may be gone
    if setting.startswith("SPORTS_") and _client is not None:
        with _lock:
            _client, stale = None, _client
        if stale is not None:
            stale.close()
