"""The service says wait (`rate_limited`: the account's quota or limits are spent): the route
answers 503 `upstream_rate_limited` with the service's wait as Retry-After, never a 502.

This is the answer a site sees when one token holder has spent the account's shared quota
(docs/security.md, "One quota for every token").
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from sportsproxy.sandbox.clock import ManualClock
from tests.mintroute.conftest import post_token
from tests.mintroute.entries import assert_refusal
from tests.upstreams import fake_upstream, http_response


def test_a_spent_sandbox_quota_is_503_with_the_services_wait(
    browser: Client, settings: Any, clock: ManualClock
) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"starter": {"requests_per_minute": 2}}
    first = post_token(browser, json.dumps({"reason": "unauthorized"}))
    second = post_token(browser, json.dumps({"reason": "unauthorized"}))
    assert (first.status_code, second.status_code) == (200, 200)

    spent = post_token(browser, json.dumps({"reason": "unauthorized"}))

    body = assert_refusal(spent, 503, "upstream_rate_limited")
    assert spent["Retry-After"] == "34"  # the sandbox's window ends 34 s after 15:09:26
    assert "34 s" in body["message"]


def test_a_reusable_token_is_still_given_while_the_quota_is_spent(browser: Client, settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"starter": {"requests_per_minute": 1}}
    token = post_token(browser).json()["token"]
    assert post_token(browser, json.dumps({"reason": "unauthorized"})).status_code == 503
    assert post_token(browser).json()["token"] == token  # reuse spends nothing upstream


@pytest.mark.parametrize(
    ("data", "retry_after"),
    [
        ({"retryAfter": 2.1}, "3"),  # rounded up to whole seconds
        ({"retryAfter": 7}, "7"),
        ({}, "60"),  # no wait given
        (None, "60"),
        ({"retryAfter": "soon"}, "60"),
        ({"retryAfter": -5}, "60"),
        ({"retryAfter": 1e300}, "86400"),  # at most a day
    ],
)
def test_the_wait_is_the_services_retry_after_rounded_up_or_60(
    browser: Client, settings: Any, data: dict[str, Any] | None, retry_after: str
) -> None:
    error: dict[str, Any] = {"code": "rate_limited", "message": "Quota spent."}
    if data is not None:
        error["data"] = data
    envelope = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    with fake_upstream(lambda body: http_response(envelope)) as url:
        settings.SPORTS_TRANSPORT = "http"
        settings.SPORTS_BASE_URL = url
        response = post_token(browser)
    assert_refusal(response, 503, "upstream_rate_limited")
    assert response["Retry-After"] == retry_after
