"""System checks for the mint route's settings: wrong values fail `manage.py check`, not a request."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, register

from mintroute import conf


@register("mintroute")
def check_mint_route_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [problem.as_check_message() for problem in conf.problems()]
