"""Authentication that cannot work: a class whose app is missing is a check error
(mintroute.E010); a class that raises, or a session store that cannot be reached, is 503
`authentication_unavailable` (logged with its traceback, `Retry-After`, `no-store`), never a 500;
and the route recovers with the store."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from mintroute.checks import check_mint_route_settings
from tests.mintroute.conftest import logged_in_browser, post_token
from tests.mintroute.entries import assert_refusal
from tests.mintroute.test_authentication import SESSION, app_call
from tests.upstreams import closed_port_url

TOKEN_AUTHENTICATION = "rest_framework.authentication.TokenAuthentication"
BROKEN = "tests.mintroute.failing_auth.BrokenAuthentication"
MISSING_ATTRIBUTE = "tests.mintroute.failing_auth.MissingAttributeAuthentication"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def assert_authentication_unavailable(response: Any) -> dict[str, Any]:
    body = assert_refusal(response, 503, "authentication_unavailable")
    assert int(response["Retry-After"]) > 0
    return body


def test_token_authentication_without_its_app_is_check_error_e010_naming_the_app(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, TOKEN_AUTHENTICATION]
    [message] = check_mint_route_settings()
    assert message.id == "mintroute.E010"
    assert "'rest_framework.authtoken'" in message.msg
    assert '"rest_framework.authtoken"' in str(message.hint)


def test_classes_whose_models_are_installed_pass(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, "tests.mintroute.device_auth.DeviceAuthentication", BROKEN]
    assert check_mint_route_settings() == []


def manage_check(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check` of this project under a settings module with `overrides` (a fresh process:
    whether DRF's Token model is concrete is decided when Django starts)."""
    (tmp_path / "checked_settings.py").write_text(
        "from config.settings import *  # noqa: F403\n" + textwrap.dedent("\n".join(overrides)) + "\n"
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--settings", "checked_settings"],
        cwd=PROJECT_ROOT,
        # The embedded sandbox stands in for the service, as in every test of the route (whatever the project mounts).
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": f"{tmp_path}:{PROJECT_ROOT}",
            "DJANGO_DEBUG": "1",
            "SPORTS_SANDBOX": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_manage_py_check_fails_without_the_app_and_passes_with_it(tmp_path: Path) -> None:
    listed = f"SPORTS_TOKEN_AUTHENTICATION = [{TOKEN_AUTHENTICATION!r}]"
    without = manage_check(tmp_path, listed)
    assert without.returncode != 0
    assert "(mintroute.E010)" in without.stderr
    assert "rest_framework.authtoken" in without.stderr
    with_app = manage_check(tmp_path, listed, 'INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework.authtoken"]')
    assert with_app.returncode == 0, with_app.stderr


def test_a_site_that_skipped_check_gets_503_authentication_unavailable_not_a_500(settings: Any, caplog: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [TOKEN_AUTHENTICATION]
    with caplog.at_level(logging.ERROR):
        response = app_call(Client(enforce_csrf_checks=True), device=None)
    body = assert_authentication_unavailable(response)
    assert "rest_framework" not in body["message"]  # production: the detail is in the log, with the id
    assert "mintroute.E010" in caplog.text


@pytest.mark.parametrize("broken", [BROKEN, MISSING_ATTRIBUTE])
def test_a_class_that_raises_is_503_logged_with_its_traceback(settings: Any, caplog: Any, broken: str) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [broken]
    User.objects.create_user("phone-owner", password="pw")
    with caplog.at_level(logging.ERROR):
        response = app_call()
    assert_authentication_unavailable(response)
    [record] = [record for record in caplog.records if record.name == "mintroute.admission"]
    assert record.exc_info is not None


def test_a_class_that_raises_after_the_session_class_still_lets_the_session_mint(settings: Any) -> None:
    settings.SPORTS_TOKEN_AUTHENTICATION = [SESSION, BROKEN]
    assert post_token(logged_in_browser()).status_code == 200  # the session authenticated first


@pytest.mark.parametrize("save_every_request", [False, True])
def test_a_cache_backed_session_store_that_is_down_is_503_then_recovers(
    settings: Any, caplog: Any, save_every_request: bool
) -> None:
    settings.SESSION_SAVE_EVERY_REQUEST = save_every_request  # Django saves no session on a 5xx answer
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    browser = logged_in_browser()  # its session is in the cache, which works here
    assert post_token(browser).status_code == 200
    working = settings.CACHES
    settings.CACHES = {
        **working,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": closed_port_url().replace("http://", "redis://"),
        },
    }
    with caplog.at_level(logging.ERROR):
        response = post_token(browser, '{"reason": "unauthorized"}')
    assert_authentication_unavailable(response)
    assert "Traceback" not in response.content.decode()
    settings.CACHES = working
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200
