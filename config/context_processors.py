"""What every page of the site shows: the project's name, and the login page's hints from the site's apps."""

from __future__ import annotations

from django.apps import apps
from django.http import HttpRequest
from django.utils.safestring import SafeString

from config import project


def identity() -> dict[str, object]:
    """What a page needs to wear the product's name, read from code alone: no request, no database, no
    cache. A page rendered without a request (the 503 page, config/unavailable.py) takes it as its context."""
    return {"project_name": project.NAME}


def site(request: HttpRequest) -> dict[str, object]:
    """`identity()`, and `login_hints`: what each installed app with a `login_hint()` says now (if anything)."""
    offered = (getattr(config, "login_hint", None) for config in apps.get_app_configs())
    hints: list[SafeString] = [hint for ask in offered if ask is not None and (hint := ask())]
    return {**identity(), "login_hints": hints}
