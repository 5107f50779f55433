from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "config.demo"
    label = "demo"
    verbose_name = "Demo page"

    def ready(self) -> None:
        from config.demo import checks  # noqa: F401 - registers the deploy check on the demo user
