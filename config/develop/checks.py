"""config.E002: a development run with no service to call says how to get one (`make dev`).

A project that never mounts the sandbox (config/project.py's SANDBOX is "tests") calls SPORTS_BASE_URL, in
development too; `runserver` alone then stops on sportsproxy.E001 and E006, which name the settings but not
this project's way to start a service beside the site.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register


@register()
def check_a_service_to_develop_against(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """config.E002: debug on, the sandbox not mounted and SPORTS_BASE_URL unset."""
    if not settings.DEBUG or settings.SPORTS_SANDBOX or settings.SPORTS_BASE_URL:
        return []
    return [
        Error(
            "This site calls the sports service at SPORTS_BASE_URL, which is not set, and it does not mount the "
            "sandbox: there is no service to develop against.",
            hint="Run `make dev`: it starts the standalone sandbox as the service, keeps its address and key in "
            ".env, and serves the site against it. Or set SPORTS_BASE_URL and SPORTS_API_KEY to a service of "
            "your own (docs/settings.md).",
            id="config.E002",
        )
    ]
