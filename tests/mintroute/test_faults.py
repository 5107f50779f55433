"""Upstream faults, each with its exact outcome at the mint route and in the SDK."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sportsproxy import SportsClient, SportsProtocolError, SportsUnavailable
from tests.mintroute.conftest import post_token
from tests.upstreams import RESET, closed_port_url, fake_upstream, http_response, truncated_response

TRUNCATED = truncated_response(b'{"jsonrpc": "2.0", "id": "x", "result": {"tok')


@pytest.mark.parametrize(
    ("reply", "status", "code"),
    [
        (lambda body: http_response(b"<html>bad gateway</html>", content_type="text/html"), 502, "upstream_error"),
        (lambda body: TRUNCATED, 502, "upstream_error"),
        (lambda body: RESET, 503, "upstream_unavailable"),
        (lambda body: None, 504, "upstream_timeout"),
    ],
    ids=["html", "truncated-body", "reset-mid-body", "hangs"],
)
def test_an_upstream_fault_has_its_exact_answer_and_the_route_recovers(
    browser: Client, settings: Any, reply: Any, status: int, code: str
) -> None:
    settings.SPORTS_TIMEOUT = 0.5
    with fake_upstream(reply) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        response = post_token(browser, '{"reason": "unauthorized"}')
    assert response.status_code == status
    assert response.json()["error"] == code
    settings.SPORTS_TRANSPORT = "sandbox"  # the upstream is back: the next mint works
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200


def test_refused_connections_are_503_then_recover(browser: Client, settings: Any) -> None:
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = closed_port_url()
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 503
    settings.SPORTS_TRANSPORT = "sandbox"
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200


def test_the_sdk_names_a_truncated_body_and_a_reset(api_key: str) -> None:
    with fake_upstream(lambda body: TRUNCATED) as url, SportsClient(api_key, base_url=url) as client:
        with pytest.raises(SportsProtocolError):
            client.call("auth")
    with fake_upstream(lambda body: RESET) as url, SportsClient(api_key, base_url=url, max_retries=0) as client:
        with pytest.raises((SportsUnavailable, SportsProtocolError)):
            client.call("auth")
