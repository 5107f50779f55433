from __future__ import annotations

from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_in


class MintRouteConfig(AppConfig):
    name = "mintroute"
    verbose_name = "Sports token mint route"

    def ready(self) -> None:
        # The route's own checks, and the SDK glue's (the key, the address): installing
        # "mintroute" alone brings every check the route depends on.
        from mintroute import checks  # noqa: F401
        from mintroute.reuse import note_login
        from sportsproxy.django import checks as sdk_checks  # noqa: F401

        # Each login gets a nonce of its own in the session: a remembered token belongs to one login.
        user_logged_in.connect(note_login, dispatch_uid="mintroute.reuse.note_login")
