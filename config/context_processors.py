"""What every page of the site shows: the project's name, and the login page's hints from the site's apps."""

from __future__ import annotations

from django.apps import apps
from django.http import HttpRequest
from django.utils.safestring import SafeString

from config import project


def site(request: HttpRequest) -> dict[str, object]:
    """`project_name`, and `login_hints`: what each installed app with a `login_hint()` says now (if anything)."""
    offered = (getattr(config, "login_hint", None) for config in apps.get_app_configs())
    hints: list[SafeString] = [hint for ask in offered if ask is not None and (hint := ask())]
    return {"project_name": project.NAME, "login_hints": hints}
