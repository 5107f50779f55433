"""The demo's login hint (DemoConfig.login_hint, shown by config.context_processors): in the demo only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

HINT = re.compile(r"demo-pass-123|DEMO_PASSWORD")


@pytest.mark.parametrize(
    ("debug", "sandbox", "shown"),
    [(True, True, True), (False, True, False), (True, False, False), (False, False, False)],
    ids=["the demo", "production", "debug against a real service", "production against a real service"],
)
def test_the_demo_users_hint_is_shown_only_in_the_demo(settings: Any, debug: bool, sandbox: bool, shown: bool) -> None:
    settings.DEBUG = debug
    settings.SPORTS_SANDBOX = sandbox
    page = Client().get("/accounts/login/").content.decode()
    assert bool(HINT.search(page)) is shown
