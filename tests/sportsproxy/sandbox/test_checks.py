"""The sandbox's checks: its numbers and limits (sandbox.E003, E004), and with --deploy its signing
key, not guessable and not the site's SECRET_KEY (nor a part of it, nor the other way round)."""

from __future__ import annotations

import io
import secrets
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.core.management.utils import get_random_secret_key

from sportsproxy.django.problems import SettingsError
from sportsproxy.sandbox import conf
from sportsproxy.sandbox.checks import check_sandbox_settings, check_signing_key_is_its_own, check_signing_key_is_strong


def test_a_signing_key_equal_to_the_secret_key_is_e001_naming_both_variables(settings: Any) -> None:
    settings.SPORTS_SANDBOX_SIGNING_KEY = settings.SECRET_KEY
    (message,) = check_signing_key_is_its_own()
    assert message.id == "sandbox.E001"
    assert "SPORTS_SANDBOX_SIGNING_KEY" in message.msg
    assert "DJANGO_SECRET_KEY" in message.msg
    assert settings.SECRET_KEY not in message.msg + (message.hint or "")


@pytest.mark.parametrize("relation", ["contained", "contains", "white space", "reversed", "case-swapped"])
def test_a_signing_key_inside_the_secret_key_or_around_it_is_e001(settings: Any, relation: str) -> None:
    settings.SECRET_KEY = get_random_secret_key()
    settings.SPORTS_SANDBOX_SIGNING_KEY = {
        "contained": settings.SECRET_KEY[8:48],
        "contains": settings.SECRET_KEY + secrets.token_hex(4),
        "white space": f"{settings.SECRET_KEY[:30]} {settings.SECRET_KEY[30:]}",
        "reversed": settings.SECRET_KEY[::-1],
        "case-swapped": settings.SECRET_KEY.swapcase(),
    }[relation]
    assert [message.id for message in check_signing_key_is_its_own()] == ["sandbox.E001"]
    with pytest.raises(SystemCheckError, match=r"sandbox\.E001"):
        call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())


WEAK_SIGNING_KEYS = {
    "a x 32": "a" * 32,
    "short": "short",
    "empty": "",
    "31 characters": secrets.token_hex(16)[:31],
    "9 distinct": "abcdefghi" * 5,
    "white space at the end": secrets.token_hex(32) + " ",
    "one string repeated": "0123456789abcdef" * 3,
    "a x 22 + 0123456789": "a" * 22 + "0123456789",
}


@pytest.mark.parametrize("case", WEAK_SIGNING_KEYS)
def test_a_weak_signing_key_is_e002_under_check_deploy(settings: Any, case: str) -> None:
    settings.SECRET_KEY = secrets.token_hex(32)
    settings.SPORTS_SANDBOX_SIGNING_KEY = WEAK_SIGNING_KEYS[case]
    with pytest.raises(SystemCheckError, match=r"sandbox\.E002"):
        call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())
    (message,) = check_signing_key_is_strong()
    assert "SPORTS_SANDBOX_SIGNING_KEY" in message.msg


@pytest.mark.parametrize(
    "source", [lambda: secrets.token_hex(32), lambda: secrets.token_urlsafe(48), get_random_secret_key]
)
def test_random_keys_of_its_own_pass(settings: Any, source: Any) -> None:
    settings.SECRET_KEY = get_random_secret_key()
    settings.SPORTS_SANDBOX_SIGNING_KEY = source()
    assert check_signing_key_is_its_own() == []
    assert check_signing_key_is_strong() == []


def test_they_run_with_deploy_only(settings: Any) -> None:
    settings.SPORTS_SANDBOX_SIGNING_KEY = settings.SECRET_KEY
    assert "sandbox.E001" not in {message.id for message in run_checks(include_deployment_checks=False)}
    assert "sandbox.E001" in {message.id for message in run_checks(include_deployment_checks=True)}


# --- the sandbox's numbers and limits (sandbox.E003, sandbox.E004), reported by plain `check` --------


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("SPORTS_SANDBOX_WS_TICK", 0),
        ("SPORTS_SANDBOX_WS_AUTH_TIMEOUT", "soon"),
        ("SPORTS_SANDBOX_WS_PING_AFTER", 0),
        ("SPORTS_SANDBOX_EVENT_INTERVAL", float("inf")),
        ("SPORTS_SANDBOX_SLOT_HEARTBEAT", -1),
        ("SPORTS_SANDBOX_JWT_LEEWAY", None),
        ("SPORTS_SANDBOX_LAST_USED_INTERVAL", True),
    ],
)
def test_a_number_that_is_not_seconds_is_e003_naming_it(settings: Any, setting: str, value: object) -> None:
    setattr(settings, setting, value)
    [message] = check_sandbox_settings()
    assert message.id == "sandbox.E003"
    assert message.msg.startswith(f"{setting} must be a number of seconds")
    reader = next(read for read in conf.READERS if setting.removeprefix("SPORTS_SANDBOX_").lower() in read.__name__)
    with pytest.raises(SettingsError) as raised:  # run time says the same sentence
        reader()
    assert str(raised.value) == f"{message.msg} {message.hint}"


def test_zero_leeway_and_default_numbers_pass(settings: Any) -> None:
    settings.SPORTS_SANDBOX_JWT_LEEWAY = 0
    assert check_sandbox_settings() == []


@pytest.mark.parametrize(
    "overrides",
    [{"platinum": {"connections": 1}}, {"free": {"sockets": 1}}, {"free": {"connections": -1}}, {"free": 5}, []],
)
def test_rate_classes_naming_what_does_not_exist_is_e004(settings: Any, overrides: object) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = overrides
    assert [message.id for message in check_sandbox_settings()] == ["sandbox.E004"]
    with pytest.raises(SettingsError, match="SPORTS_SANDBOX_RATE_CLASSES"):
        conf.rate_class("free")


def test_rate_classes_override_a_tier_limit(settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"free": {"requests_per_minute": 10}}
    assert check_sandbox_settings() == []
    assert conf.rate_class("free").requests_per_minute == 10
    assert conf.rate_class("free").connections == conf.DEFAULT_RATE_CLASSES["free"].connections
