from __future__ import annotations

from typing import Any

import pytest

from mintroute.checks import check_mint_route_settings


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
