from __future__ import annotations

from django.apps import AppConfig


class DevelopConfig(AppConfig):
    """What a development run of this site needs, said where a developer first looks: `manage.py check`."""

    name = "config.develop"
    label = "develop"
    verbose_name = "Development"

    def ready(self) -> None:
        from config.develop import checks  # noqa: F401 - registers the check on the service to develop against
