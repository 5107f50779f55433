from __future__ import annotations

from django.apps import AppConfig


class MintRouteConfig(AppConfig):
    name = "mintroute"
    verbose_name = "Sports token mint route"

    def ready(self) -> None:
        from mintroute import checks  # noqa: F401 - registers the system checks
