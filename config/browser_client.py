"""The browser client's configuration, as the site's pages hand it over (a `json_script` named "client-config")."""

from __future__ import annotations

from django.conf import settings


def client_config() -> dict[str, object]:
    """Where the client mints (this site's route) and which service addresses it calls (docs/browser-client.md)."""
    return {
        "authEndpoint": "/api/sports-token",
        "baseUrl": settings.SPORTS_PUBLIC_BASE_URL or None,
        "wsUrl": settings.SPORTS_PUBLIC_WS_URL or None,
        "refreshLeewaySec": settings.SPORTS_CLIENT_REFRESH_LEEWAY,
        "sandbox": settings.SPORTS_SANDBOX,
    }
