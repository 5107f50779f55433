"""`manage.py check` reports bad SDK settings with hints, never quoting the key."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.checks import WARNING, run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from sportsproxy import SportsClient
from sportsproxy.django.checks import check_no_test_key_in_production, check_sports_settings


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


def test_a_missing_key_in_sandbox_mode_is_only_a_warning_naming_sandbox_key(settings: Any) -> None:
    settings.SPORTS_API_KEY = ""
    settings.SPORTS_TRANSPORT = "sandbox"
    messages = check_sports_settings()
    assert [message.id for message in messages] == ["sportsproxy.W001"]
    assert "sandbox_key create" in (messages[0].hint or "")


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


NOT_ORIGINS = {  # each URL, and the part E004 names
    "https://api.example.com/sdk/v1/rpc": "it has a path",  # the RPC path: the SDK adds it itself
    "https://api.example.com/v1": "it has a path",
    "https://api.example.com//": "it has a path",
    "https://api.example.com?x=1": "it has a query",
    "https://api.example.com?": "it has a query",
    "https://api.example.com#top": "it has a fragment",
    "https://user:secret@api.example.com": "it has user info",
    "ftp://api.example.com": "its scheme is 'ftp', not http or https",
    "api.example.com": "it has no scheme",
    "api.example.com:8000": "it has no scheme",
    "https://": "it has no host",
    "https://api.example.com:port": "its port is not a number from 1 to 65535",
    "https://api.example.com:87011": "its port is not a number from 1 to 65535",
    "https://api.example.com:0": "its port is not a number from 1 to 65535",
    "https://[::1]:70000": "its port is not a number from 1 to 65535",
    "http://127.0.0.1:8000\t": "it contains white space",  # a stray tab or newline from a .env file
    "http://127.0.0.1:8000\n": "it contains white space",
    " http://127.0.0.1:8000": "it contains white space",
}


@pytest.mark.parametrize("url", NOT_ORIGINS)
def test_a_base_url_that_is_not_an_origin_is_e004_naming_the_part(over_http: Any, api_key: str, url: str) -> None:
    over_http.SPORTS_API_KEY = api_key
    over_http.SPORTS_BASE_URL = url
    (message,) = check_sports_settings()
    assert message.id == "sportsproxy.E004"
    assert message.msg.startswith("SPORTS_BASE_URL is not the service's origin")
    assert NOT_ORIGINS[url] in message.msg
    assert "secret" not in message.msg  # user info is named, never quoted
    with pytest.raises(ValueError, match="origin") as refused:  # the SDK client refuses with the same words
        SportsClient(api_key, base_url=url)
    assert message.msg.removeprefix("SPORTS_BASE_URL ").removesuffix(".") in str(refused.value)


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


def test_a_test_key_with_debug_off_is_a_deploy_warning_only(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = "sk_test_" + "k" * 40
    settings.DEBUG = False
    (message,) = check_no_test_key_in_production()
    assert (message.id, message.level) == ("sportsproxy.W002", WARNING)
    assert "SPORTS_API_KEY" in message.msg
    assert settings.SPORTS_API_KEY not in message.msg + (message.hint or "")
    assert 'SILENCED_SYSTEM_CHECKS = ["sportsproxy.W002"] (here: DJANGO_SILENCED_SYSTEM_CHECKS=sportsproxy.W002)' in (
        message.hint or ""
    )  # this project's settings name the variable that fills the setting
    assert "sportsproxy.W002" not in {found.id for found in run_checks(include_deployment_checks=False)}
    assert "sportsproxy.W002" in {found.id for found in run_checks(include_deployment_checks=True)}


def test_a_live_key_or_debug_on_is_no_w002(settings: Any) -> None:
    settings.DEBUG = False
    settings.SPORTS_API_KEY = "sk_live_" + "k" * 40
    assert check_no_test_key_in_production() == []
    settings.DEBUG = True
    settings.SPORTS_API_KEY = "sk_test_" + "k" * 40
    assert check_no_test_key_in_production() == []
