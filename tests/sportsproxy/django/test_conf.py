"""The SDK's settings readers: each wrong setting is one Problem, said with the same sentence by
`manage.py check` and at run time (building the shared client), and the SDK client refuses the
same value with the same words."""

from __future__ import annotations

from typing import Any

import pytest

from sportsproxy import SportsClient
from sportsproxy.django import conf, shared
from sportsproxy.django.checks import check_sports_settings
from sportsproxy.django.problems import SettingsError

WRONG = [
    ("SPORTS_API_KEY", "", "sportsproxy.E001"),
    ("SPORTS_API_KEY", "sk_live_short", "sportsproxy.E002"),
    ("SPORTS_TIMEOUT", "soon", "sportsproxy.E003"),
    ("SPORTS_BASE_URL", "https://api.example.com/sdk/v1/rpc", "sportsproxy.E004"),
    ("SPORTS_API_KEY_PREVIOUS", "sk_test_short", "sportsproxy.E005"),
    ("SPORTS_BASE_URL", "", "sportsproxy.E006"),
    ("SPORTS_TRANSPORT", "pigeon", "sportsproxy.E008"),
]


@pytest.fixture
def over_http(settings: Any, api_key: str) -> Any:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = "https://api.example.com"
    return settings


def run_time(setting: str) -> None:
    """What the route does at its first mint: build the shared client (and, in a rotation, the previous key's)."""
    if setting == "SPORTS_API_KEY_PREVIOUS":
        shared.get_previous_client()
    else:
        shared.build_client()


@pytest.mark.parametrize(("setting", "value", "check_id"), WRONG)
def test_check_and_run_time_say_the_same_sentence(over_http: Any, setting: str, value: str, check_id: str) -> None:
    setattr(over_http, setting, value)
    [message] = check_sports_settings()
    assert message.id == check_id
    assert setting in message.msg
    with pytest.raises(SettingsError) as raised:
        run_time(setting)
    assert raised.value.problem.id == check_id
    assert str(raised.value) == f"{message.msg} {message.hint}"


def test_problems_lists_every_wrong_setting_once_in_the_order_to_fix_them(over_http: Any) -> None:
    over_http.SPORTS_API_KEY = "sk_live_short"
    over_http.SPORTS_TRANSPORT = "pigeon"
    over_http.SPORTS_API_KEY_PREVIOUS = "nope"
    assert [problem.id for problem in conf.problems()] == ["sportsproxy.E002", "sportsproxy.E008", "sportsproxy.E005"]


def test_the_sdk_client_refuses_a_malformed_key_and_a_base_url_with_the_checks_words(over_http: Any) -> None:
    over_http.SPORTS_API_KEY = "sk_live_short"
    over_http.SPORTS_BASE_URL = "https://api.example.com/path"
    key_check, url_check = (message.msg for message in check_sports_settings())
    with pytest.raises(ValueError, match=r"^api_key ") as key_refusal:
        SportsClient(api_key="sk_live_short", base_url="https://api.example.com")
    with pytest.raises(ValueError, match=r"^base_url ") as url_refusal:
        SportsClient(api_key="sk_live_" + "a" * 32, base_url="https://api.example.com/path")
    assert key_check.removeprefix("SPORTS_API_KEY ") in str(key_refusal.value)
    assert url_check.removeprefix("SPORTS_BASE_URL ") in str(url_refusal.value)
