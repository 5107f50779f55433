from __future__ import annotations

from django.apps import AppConfig


class SportsProxyConfig(AppConfig):
    name = "sportsproxy"
    verbose_name = "Sports data service client"

    def ready(self) -> None:
        from sportsproxy import checks, shared  # noqa: F401 - registers system checks and signal handlers
