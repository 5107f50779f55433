"""config.E002: a development run with no service to call says to run `make dev`."""

from __future__ import annotations

from typing import Any

from config.develop.checks import check_a_service_to_develop_against


def test_debug_with_no_service_and_no_sandbox_is_e002_saying_make_dev(settings: Any) -> None:
    settings.DEBUG, settings.SPORTS_SANDBOX, settings.SPORTS_BASE_URL = True, False, ""
    [message] = check_a_service_to_develop_against()
    assert message.id == "config.E002"
    assert "SPORTS_BASE_URL" in message.msg
    assert "`make dev`" in str(message.hint)


def test_a_service_a_mounted_sandbox_or_production_is_no_e002(settings: Any) -> None:
    settings.DEBUG, settings.SPORTS_SANDBOX, settings.SPORTS_BASE_URL = True, False, "https://api.example.com"
    assert check_a_service_to_develop_against() == []
    settings.SPORTS_BASE_URL, settings.SPORTS_SANDBOX = "", True
    assert check_a_service_to_develop_against() == []
    settings.DEBUG, settings.SPORTS_SANDBOX = False, False  # production: sportsproxy.E006 says it, with the deploy docs
    assert check_a_service_to_develop_against() == []
