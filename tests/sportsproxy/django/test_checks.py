"""`manage.py check` reports bad SDK settings with hints, never quoting the key."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from sportsproxy.django.checks import check_sports_settings


def ids(settings: Any) -> list[str]:
    return [message.id or "" for message in check_sports_settings()]


def test_a_good_configuration_passes(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    assert ids(settings) == []


@pytest.fixture
def over_http(settings: Any) -> Any:
    """An integrator's configuration: the service at SPORTS_BASE_URL, no sandbox selected."""
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = "https://api.example.com"
    return settings


def test_a_missing_key_in_sandbox_mode_is_only_a_warning_naming_demo_setup(settings: Any) -> None:
    settings.SPORTS_API_KEY = ""
    settings.SPORTS_TRANSPORT = "sandbox"
    messages = check_sports_settings()
    assert [message.id for message in messages] == ["sportsproxy.W001"]
    assert "demo_setup" in (messages[0].hint or "")


def test_a_missing_key_over_http_is_an_error(over_http: Any) -> None:
    over_http.SPORTS_API_KEY = ""
    assert ids(over_http) == ["sportsproxy.E001"]


def test_a_missing_base_url_over_http_is_an_error_naming_both_ways_out(over_http: Any, api_key: str) -> None:
    over_http.SPORTS_API_KEY = api_key
    over_http.SPORTS_BASE_URL = ""
    messages = check_sports_settings()
    assert [message.id for message in messages] == ["sportsproxy.E006"]
    assert "SPORTS_BASE_URL" in (messages[0].hint or "")
    assert "SPORTS_TRANSPORT" in (messages[0].hint or "")


def test_the_sandbox_transport_without_the_sandbox_app_is_an_error(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "sandbox"
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "sportsproxy.sandbox"]
    assert ids(settings) == ["sportsproxy.E007"]


def test_an_unknown_transport_is_an_error(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "carrier-pigeon"
    assert ids(settings) == ["sportsproxy.E008"]


def test_a_malformed_key_is_an_error_that_does_not_quote_it(settings: Any) -> None:
    settings.SPORTS_API_KEY = "sk_live_not-long-enough"
    messages = check_sports_settings()
    assert [message.id for message in messages] == ["sportsproxy.E002"]
    assert "not-long-enough" not in f"{messages[0].msg} {messages[0].hint}"


@pytest.mark.parametrize("timeout", ["five", "0", "-1", "nan", "301", None])
def test_a_bad_timeout_is_an_error_with_a_hint(settings: Any, api_key: str, timeout: object) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TIMEOUT = timeout
    messages = check_sports_settings()
    assert [message.id for message in messages] == ["sportsproxy.E003"]
    assert "SPORTS_TIMEOUT" in messages[0].msg


def test_a_base_url_without_a_scheme_is_an_error(over_http: Any, api_key: str) -> None:
    over_http.SPORTS_API_KEY = api_key
    over_http.SPORTS_BASE_URL = "api.example.com"
    assert ids(over_http) == ["sportsproxy.E004"]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/sdk/v1/rpc",  # the RPC path: the SDK adds it itself
        "https://api.example.com/v1",
        "https://api.example.com?x=1",
        "https://api.example.com#top",
        "https://user:secret@api.example.com",
        "ftp://api.example.com",
        "https://",
        "https://api.example.com:port",
        "http://127.0.0.1:8000\t",  # a stray tab or newline from a .env file
        "http://127.0.0.1:8000\n",
        " http://127.0.0.1:8000",
        "https://api.example.com//",
    ],
)
def test_a_base_url_that_is_not_an_origin_is_e004(over_http: Any, api_key: str, url: str) -> None:
    over_http.SPORTS_API_KEY = api_key
    over_http.SPORTS_BASE_URL = url
    assert ids(over_http) == ["sportsproxy.E004"]


@pytest.mark.parametrize(
    "url", ["https://api.example.com", "https://api.example.com/", "http://127.0.0.1:8000", "http://[::1]:8000/"]
)
def test_an_origin_with_an_optional_port_and_slash_passes(over_http: Any, api_key: str, url: str) -> None:
    over_http.SPORTS_API_KEY = api_key
    over_http.SPORTS_BASE_URL = url
    assert ids(over_http) == []


def test_manage_py_check_fails_on_errors(settings: Any) -> None:
    settings.SPORTS_API_KEY = "sk_live_bad"
    with pytest.raises(SystemCheckError, match=r"sportsproxy\.E002"):
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())


def test_a_malformed_previous_key_is_an_error(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_API_KEY_PREVIOUS = "sk_live_short"
    assert ids(settings) == ["sportsproxy.E005"]
