from __future__ import annotations

from django.apps import AppConfig


class MintRouteConfig(AppConfig):
    name = "mintroute"
    verbose_name = "Sports token mint route"

    def ready(self) -> None:
        # The route's own checks, and the SDK glue's (the key, the address): installing
        # "mintroute" alone brings every check the route depends on.
        from mintroute import checks  # noqa: F401
        from sportsproxy.django import checks as sdk_checks  # noqa: F401
