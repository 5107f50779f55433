from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "config.demo"
    label = "demo"
    verbose_name = "Demo page"
