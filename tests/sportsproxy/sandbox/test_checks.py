"""The sandbox's deploy check: its tokens are never signed with the site's SECRET_KEY."""

from __future__ import annotations

from typing import Any

from django.core.checks import run_checks

from sportsproxy.sandbox.checks import check_signing_key_is_its_own


def test_a_signing_key_equal_to_the_secret_key_is_e001_naming_both_variables(settings: Any) -> None:
    settings.SPORTS_SANDBOX_SIGNING_KEY = settings.SECRET_KEY
    (message,) = check_signing_key_is_its_own()
    assert message.id == "sandbox.E001"
    assert "SPORTS_SANDBOX_SIGNING_KEY" in message.msg
    assert "DJANGO_SECRET_KEY" in message.msg
    assert settings.SECRET_KEY not in message.msg + (message.hint or "")


def test_a_signing_key_of_its_own_passes(settings: Any) -> None:
    settings.SPORTS_SANDBOX_SIGNING_KEY = "s" * 48
    assert check_signing_key_is_its_own() == []


def test_it_runs_with_deploy_only(settings: Any) -> None:
    settings.SPORTS_SANDBOX_SIGNING_KEY = settings.SECRET_KEY
    assert "sandbox.E001" not in {message.id for message in run_checks(include_deployment_checks=False)}
    assert "sandbox.E001" in {message.id for message in run_checks(include_deployment_checks=True)}
