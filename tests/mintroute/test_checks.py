from __future__ import annotations

import io
import secrets
import string
from typing import Any

import pytest
from django.core.checks import WARNING, Tags, run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.core.management.utils import get_random_secret_key

from mintroute.checks import check_mint_route_settings, check_rate_limits_are_shared, check_secret_key_is_strong


def ids() -> list[str]:
    return [message.id or "" for message in check_mint_route_settings()]


def test_the_defaults_pass() -> None:
    assert ids() == []


@pytest.mark.parametrize("ttl", [59, 86401, 0, "ten", None])
def test_a_ttl_out_of_bounds_is_an_error(settings: Any, ttl: object) -> None:
    settings.SPORTS_TOKEN_TTL = ttl
    assert ids() == ["mintroute.E001"]


@pytest.mark.parametrize("rate", ["ten per minute", "10", "/m", "10/m/s"])
def test_a_rate_django_ratelimit_cannot_read_is_an_error(settings: Any, rate: str) -> None:
    settings.SPORTS_TOKEN_RATE = rate
    assert ids() == ["mintroute.E002"]


@pytest.mark.parametrize("hook", ["nowhere.to.be.found", "mintroute.conf", 42])
def test_a_permission_hook_that_is_not_callable_is_an_error(settings: Any, hook: object) -> None:
    settings.SPORTS_TOKEN_PERMISSION = hook
    assert ids() == ["mintroute.E003"]


@pytest.mark.parametrize("count", [-1, "two"])
def test_a_bad_trusted_proxy_count_is_an_error(settings: Any, count: object) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = count
    assert ids() == ["mintroute.E004"]


@pytest.mark.parametrize("proxies", [["10.0.0.1", "not-an-address"], ["10.0.0.0/33"], "10.0.0.1, nginx", 42, [7]])
def test_trusted_proxies_that_are_not_addresses_or_networks_are_an_error(settings: Any, proxies: object) -> None:
    settings.SPORTS_TRUSTED_PROXIES = proxies
    (message,) = check_mint_route_settings()
    assert message.id == "mintroute.E004"
    assert "SPORTS_TRUSTED_PROXIES" in message.msg


# --- `check --deploy` only: production refuses what a laptop may do ---------------------------

REDIS = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/0"}
LOCAL_MEMORY = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
DUMMY = {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}


def deploy_ids() -> list[str]:
    found = run_checks(include_deployment_checks=True, tags=[Tags.security])
    return sorted(message.id or "" for message in found if (message.id or "").startswith("mintroute."))


@pytest.mark.parametrize("backend", [LOCAL_MEMORY, DUMMY], ids=["locmem", "dummy"])
def test_a_per_process_cache_in_production_is_e006(settings: Any, backend: dict[str, str]) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": backend}
    assert check_rate_limits_are_shared() != []
    assert deploy_ids() == ["mintroute.E006"]
    (message,) = check_rate_limits_are_shared()
    assert "REDIS_URL" in (message.hint or "")


def test_e006_reads_the_cache_django_ratelimit_uses(settings: Any) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": REDIS, "limits": LOCAL_MEMORY}
    assert deploy_ids() == []
    settings.RATELIMIT_USE_CACHE = "limits"
    assert deploy_ids() == ["mintroute.E006"]


def test_a_shared_cache_or_debug_on_is_no_e006(settings: Any) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": REDIS}
    assert deploy_ids() == []
    settings.DEBUG = True
    settings.CACHES = {"default": LOCAL_MEMORY}
    assert deploy_ids() == []


def test_the_production_checks_run_with_deploy_only(settings: Any) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": LOCAL_MEMORY}
    settings.SECRET_KEY = "x"
    plain = {message.id for message in run_checks(include_deployment_checks=False)}
    assert not plain & {"mintroute.E006", "mintroute.E007"}
    assert deploy_ids() == ["mintroute.E006", "mintroute.E007"]


def test_silenced_system_checks_waives_e006(settings: Any) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": LOCAL_MEMORY}
    with pytest.raises(SystemCheckError, match=r"mintroute\.E006"):
        call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())
    settings.SILENCED_SYSTEM_CHECKS = ["mintroute.E006"]
    call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())


WEAK_SECRET_KEYS = {
    "one character": "x",
    "49 characters": secrets.token_hex(25)[:49],
    "4 distinct": "abcd" * 20,
    "abcde x 10": "abcde" * 10,
    "0123456789 x 5": "0123456789" * 5,
    "password x 7": "password" * 7,
    "startproject's key": "django-insecure-" + secrets.token_hex(32),
    "45 spaces + abcde": " " * 45 + "abcde",
    # The fifth wave's: guessable although long, varied and not one string repeated.
    "0123456789 x 5 + 0": "0123456789" * 5 + "0",
    "a x 40 + 0123456789": "a" * 40 + "0123456789",
    "the alphabet twice less its last letter": string.ascii_lowercase + string.ascii_lowercase[:-1],
    "a phrase": "this-is-my-very-secret-production-key-please-change",
    "startproject's prefix in capitals": "Django-Insecure-" + secrets.token_hex(32),
    "startproject's prefix upper-case": "DJANGO-INSECURE-" + secrets.token_hex(32),
}


@pytest.mark.parametrize("case", WEAK_SECRET_KEYS)
def test_a_weak_secret_key_is_e007_under_check_deploy_naming_the_variable(settings: Any, case: str) -> None:
    settings.DEBUG = False
    settings.SECRET_KEY = WEAK_SECRET_KEYS[case]
    with pytest.raises(SystemCheckError, match=r"mintroute\.E007") as refused:
        call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())
    (message,) = check_secret_key_is_strong()
    assert "DJANGO_SECRET_KEY" in message.msg
    if len(settings.SECRET_KEY.strip()) > 8:  # a longer secret would be recognisable in the output
        assert settings.SECRET_KEY.strip() not in str(refused.value) + message.msg + (message.hint or "")


def test_64_random_hexadecimal_characters_pass(settings: Any) -> None:
    settings.SECRET_KEY = secrets.token_hex(32)
    assert check_secret_key_is_strong() == []


# --- "site" mode keeps the site's token in the cache every process must share -------------------

FILE_BASED = {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": "/nonexistent/cache"}


@pytest.mark.parametrize("backend", [LOCAL_MEMORY, DUMMY, FILE_BASED], ids=["locmem", "dummy", "file"])
def test_site_mode_with_a_cache_processes_do_not_share_is_w011_in_debug_and_e011_in_deploy(
    settings: Any, backend: dict[str, str]
) -> None:
    settings.SPORTS_TOKEN_SHARING = "site"
    settings.CACHES = {"default": REDIS, "limits": backend}
    settings.RATELIMIT_USE_CACHE = "limits"  # where the site's token lives, as the rate limits do
    settings.SILENCED_SYSTEM_CHECKS = ["mintroute.E006"]  # a site that knows it runs one process still hears this
    settings.DEBUG = True
    plain = [message for message in run_checks() if (message.id or "").startswith("mintroute.")]
    assert [message.id for message in plain] == ["mintroute.W011"]
    assert "each process would mint its own token" in plain[0].msg
    assert plain[0].level == WARNING
    with pytest.raises(SystemCheckError, match=r"mintroute\.E011") as refused:
        call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())
    assert "each process would mint its own token" in str(refused.value)
    settings.DEBUG = False
    assert "mintroute.E011" in deploy_ids()
    assert "mintroute.W011" not in {message.id for message in run_checks()}


@pytest.mark.parametrize("mode", ["login", "site"])
def test_a_shared_cache_or_login_mode_is_no_w011_nor_e011(settings: Any, mode: str) -> None:
    settings.SPORTS_TOKEN_SHARING = mode
    settings.DEBUG = True
    settings.CACHES = {"default": REDIS if mode == "site" else LOCAL_MEMORY}
    found = {message.id for message in run_checks(include_deployment_checks=True)}
    assert not found & {"mintroute.W011", "mintroute.E011"}


@pytest.mark.parametrize("source", [lambda: secrets.token_urlsafe(48), get_random_secret_key])
def test_keys_from_a_random_source_pass_check_deploy(settings: Any, source: Any) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://"}}
    settings.SECRET_KEY = source()
    assert check_secret_key_is_strong() == []
    assert "mintroute.E007" not in deploy_ids()
