"""The Django glue: one client per process, built from settings, in-process or over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from sportsproxy.django.problems import SettingsError
from sportsproxy.django.shared import get_client
from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.models import Account


def test_one_client_is_shared_across_calls(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    first = get_client()
    assert get_client() is first
    assert first.call("auth")["ok"] is True


def test_changing_a_setting_builds_a_new_client(settings: Any, api_key: str, account: Account) -> None:
    settings.SPORTS_API_KEY = api_key
    first = get_client()
    settings.SPORTS_API_KEY = issue_key(account, "live")[1]
    second = get_client()
    assert second is not first
    assert second.call("auth")["env"] == "live"


def test_the_sandbox_transport_reaches_the_sandbox_in_process(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "sandbox"
    assert get_client().tokens.create(ttl=60).token.count(".") == 2


def test_with_a_base_url_it_calls_that_service_over_http(sports_settings: Any) -> None:
    """Two-process mode: the standalone sandbox plays the service, the glue points at it."""
    client = get_client()
    assert client.base_url == sports_settings.SPORTS_BASE_URL
    assert client.call("auth")["tier"] == "growth"  # the tier of the sandbox's first key


def test_a_missing_key_names_sandbox_key(settings: Any) -> None:
    settings.SPORTS_API_KEY = ""
    with pytest.raises(ImproperlyConfigured, match="sandbox_key create"):
        get_client()


def test_a_malformed_key_is_improperly_configured_without_quoting_it(settings: Any) -> None:
    settings.SPORTS_API_KEY = "sk_live_tooshort"
    with pytest.raises(ImproperlyConfigured) as raised:
        get_client()
    assert "sk_live_tooshort" not in str(raised.value)


def test_a_missing_base_url_over_http_fails_with_the_check_sentence(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = ""
    with pytest.raises(SettingsError, match="SPORTS_BASE_URL is not set") as raised:
        get_client()
    assert raised.value.problem.id == "sportsproxy.E006"


def test_the_sandbox_transport_without_the_app_fails_before_importing_it(settings: Any, api_key: str) -> None:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TRANSPORT = "sandbox"
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "sportsproxy.sandbox"]
    with pytest.raises(SettingsError, match="INSTALLED_APPS"):
        get_client()
