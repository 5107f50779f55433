from __future__ import annotations

from django.apps import AppConfig
from django.utils.html import format_html
from django.utils.safestring import SafeString


class DemoConfig(AppConfig):
    name = "config.demo"
    label = "demo"
    verbose_name = "Demo page"

    def ready(self) -> None:
        from config.demo import (
            checks,  # noqa: F401 - registers the deploy check on the demo user
            token_end,  # noqa: F401 - in the demo, a logout ends the login's token
        )

    def login_hint(self) -> SafeString | None:
        """The login page's line on the demo user, in the demo only (config.context_processors)."""
        from config.demo.mode import DEFAULT_DEMO_PASSWORD, DEMO_USERNAME, is_demo

        if not is_demo():
            return None
        return format_html(
            "The demo user is <code>{}</code> with the password from <code>DEMO_PASSWORD</code> "
            "(default <code>{}</code>).",
            DEMO_USERNAME,
            DEFAULT_DEMO_PASSWORD,
        )
