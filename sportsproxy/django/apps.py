from __future__ import annotations

from django.apps import AppConfig


class SportsProxyConfig(AppConfig):
    """Optional: for a site that uses the SDK's Django glue without the mint route."""

    name = "sportsproxy.django"
    label = "sportsproxy"
    verbose_name = "Sports data service client"

    def ready(self) -> None:
        from sportsproxy.django import checks, shared  # noqa: F401 - registers system checks and signal handlers
