"""`manage.py check` in a foreign site (the copied folders, base dependencies only): every
misconfiguration of the contract fails it with an error id of its own, and no output quotes the key."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.standalone.conftest import copy_parts
from tests.standalone.foreign_site import ForeignSite

KEY = "sk_test_" + secrets.token_urlsafe(32)
MALFORMED_TAIL = "TOPSECRETtail"

MISCONFIGURATIONS = {
    "key-missing": ("SPORTS_API_KEY = ''", "sportsproxy.E001"),
    "key-absent": ("del SPORTS_API_KEY", "sportsproxy.E001"),
    "key-malformed": (f"SPORTS_API_KEY = 'sk_live_{MALFORMED_TAIL}'", "sportsproxy.E002"),
    "base-url-missing": ("SPORTS_BASE_URL = ''", "sportsproxy.E006"),
    "base-url-absent": ("del SPORTS_BASE_URL", "sportsproxy.E006"),
    "base-url-not-http": ("SPORTS_BASE_URL = 'ftp://sports.example'", "sportsproxy.E004"),
    "sandbox-not-installed": ("SPORTS_TRANSPORT = 'sandbox'", "sportsproxy.E007"),
    "ttl-too-short": ("SPORTS_TOKEN_TTL = 59", "mintroute.E001"),
    "ttl-too-long": ("SPORTS_TOKEN_TTL = 86401", "mintroute.E001"),
    "rate-unreadable": ("SPORTS_TOKEN_RATE = 'ten a minute'", "mintroute.E002"),
    "permission-not-importable": ("SPORTS_TOKEN_PERMISSION = 'nowhere.hooks.allowed'", "mintroute.E003"),
    "token-authentication-without-its-app": (
        "SPORTS_TOKEN_AUTHENTICATION = ['rest_framework.authentication.TokenAuthentication']",
        "mintroute.E010",
    ),
}


@pytest.fixture(scope="module")
def site(base_python: Path, tmp_path_factory: pytest.TempPathFactory) -> ForeignSite:
    root = tmp_path_factory.mktemp("checked") / "site"
    copy_parts(root)
    return ForeignSite(root, base_python, KEY, "https://sports.example").write()


def test_a_well_configured_site_passes(site: ForeignSite) -> None:
    status, output = site.manage_status("check")
    assert status == 0, output
    assert "no issues" in output


@pytest.mark.parametrize("case", MISCONFIGURATIONS)
def test_each_misconfiguration_fails_check_with_its_id(site: ForeignSite, case: str) -> None:
    overrides, expected_id = MISCONFIGURATIONS[case]
    settings_module = site.settings_variant(case.replace("-", "_"), overrides)
    status, output = site.manage_status("check", "--settings", settings_module)
    assert status != 0, output
    assert f"({expected_id})" in output
    assert "Traceback" not in output
    assert KEY not in output
    assert MALFORMED_TAIL not in output


def test_check_deploy_reports_a_per_process_rate_limit_cache_as_e006(site: ForeignSite) -> None:
    # The foreign site has debug off and Django's default cache (local memory): its limits would
    # multiply by its number of workers.
    status, output = site.manage_status("check", "--deploy", "--fail-level", "ERROR")
    assert status != 0, output
    assert "(mintroute.E006)" in output
    assert "SILENCED_SYSTEM_CHECKS" in output  # the hint says how a one-process site waives it
    assert "(sportsproxy.W002)" in output  # a test key with debug off: its hint says the same
    assert_names_no_variable_of_this_project(output)

    settings_module = site.settings_variant("one_process", "SILENCED_SYSTEM_CHECKS = ['mintroute.E006']")
    status, output = site.manage_status("check", "--deploy", "--fail-level", "ERROR", "--settings", settings_module)
    assert "(mintroute.E006)" not in output
    assert status == 0, output


def test_check_deploy_reports_a_weak_secret_key_as_e007(site: ForeignSite) -> None:
    weak = "SILENCED_SYSTEM_CHECKS = ['mintroute.E006']\nSECRET_KEY = 'a' * 60"
    settings_module = site.settings_variant("weak_secret", weak)
    status, output = site.manage_status("check", "--deploy", "--fail-level", "ERROR", "--settings", settings_module)
    assert status != 0, output
    assert "(mintroute.E007)" in output
    assert "SECRET_KEY " in output
    assert_names_no_variable_of_this_project(output)


def assert_names_no_variable_of_this_project(output: str) -> None:
    """A site that is not this project is told of Django's settings, never of this project's variables."""
    assert "DJANGO_" not in output
    assert "REDIS_URL" not in output
