"""`mintroute.__all__` is the route's public surface: every name resolves, and nothing public is missing."""

from __future__ import annotations

import pytest

import mintroute


def test_every_exported_name_resolves() -> None:
    for name in mintroute.__all__:
        assert getattr(mintroute, name) is not None, name


def test_the_surface_is_what_integrators_and_the_site_use() -> None:
    assert sorted(mintroute.__all__) == [
        "RouteError",
        "amint_upstream",
        "client_ip",
        "enforce_rate_limit",
        "login_of",
        "mint_upstream",
        "remembered_token",
    ]
    assert set(mintroute.__all__) <= set(dir(mintroute))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="nothing_here"):
        mintroute.nothing_here  # type: ignore[attr-defined]  # noqa: B018
