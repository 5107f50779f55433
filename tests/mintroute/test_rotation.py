"""Key rotation: SPORTS_API_KEY holds the new key, SPORTS_API_KEY_PREVIOUS the old one."""

from __future__ import annotations

import logging
from typing import Any

from django.test import Client

from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.models import Account, ApiKey
from tests.mintroute.conftest import post_token


def key_row(secret: str) -> ApiKey:
    return ApiKey.objects.get(secret_hash=hash_secret(secret))


def test_the_route_keeps_minting_through_a_rotation(browser: Client, settings: Any, account: Account) -> None:
    old = settings.SPORTS_API_KEY
    new = issue_key(account, "test")[1]
    settings.SPORTS_API_KEY, settings.SPORTS_API_KEY_PREVIOUS = new, old  # the new key is deployed
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200
    assert key_row(new).last_used_at is not None
    key_row(old).revoke()  # the overlap ends
    assert post_token(browser, '{"reason": "unauthorized"}').status_code == 200


def test_a_refused_new_key_falls_back_to_the_previous_one_with_a_warning(
    browser: Client, settings: Any, caplog: Any
) -> None:
    old = settings.SPORTS_API_KEY
    settings.SPORTS_API_KEY, settings.SPORTS_API_KEY_PREVIOUS = "sk_test_" + "n" * 43, old  # not known upstream
    with caplog.at_level(logging.WARNING):
        response = post_token(browser)
    assert response.status_code == 200
    assert "Key rotation" in caplog.text
    assert key_row(old).last_used_at is not None
    assert old not in caplog.text


def test_when_both_keys_are_refused_the_route_says_upstream_unauthorized(browser: Client, settings: Any) -> None:
    old = settings.SPORTS_API_KEY
    key_row(old).revoke()
    settings.SPORTS_API_KEY, settings.SPORTS_API_KEY_PREVIOUS = "sk_test_" + "n" * 43, old
    response = post_token(browser)
    assert response.status_code == 502
    assert response.json()["error"] == "upstream_unauthorized"


def test_without_a_previous_key_there_is_no_second_try(browser: Client, settings: Any, caplog: Any) -> None:
    key_row(settings.SPORTS_API_KEY).revoke()
    with caplog.at_level(logging.WARNING):
        assert post_token(browser).status_code == 502
    assert "Key rotation" not in caplog.text
