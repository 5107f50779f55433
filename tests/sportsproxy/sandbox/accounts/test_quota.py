"""The account's requests-per-minute quota, shared by its keys and tokens, on the real endpoint."""

from __future__ import annotations

from typing import Any

import jwt
import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings

from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.accounts.quota import account_quota, mirror_all_quotas
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import Account
from tests.conftest import RpcCall
from tests.support import error_code

FIVE_PER_MINUTE = {"starter": {"requests_per_minute": 5}}


@pytest.fixture(autouse=True)
def _small_quota(clock: ManualClock):  # type: ignore[no-untyped-def]
    with override_settings(SPORTS_SANDBOX_RATE_CLASSES=FIVE_PER_MINUTE):
        yield


def test_the_request_after_the_quota_is_rate_limited_with_retry_after(
    rpc: RpcCall, api_key: str, clock: ManualClock
) -> None:
    for _ in range(5):
        assert "result" in rpc("matches.list", {}, credential=api_key)
    answer = rpc("matches.list", {}, credential=api_key)
    assert error_code(answer) == "rate_limited"
    assert "requests-per-minute" in answer["error"]["message"].lower()
    # START is 15:09:26, so the window ends in 34 s.
    assert answer["error"]["data"]["retryAfter"] == 34


def test_the_quota_comes_back_with_the_next_minute(rpc: RpcCall, api_key: str, clock: ManualClock) -> None:
    for _ in range(5):
        rpc("matches.list", {}, credential=api_key)
    assert error_code(rpc("matches.list", {}, credential=api_key)) == "rate_limited"
    clock.advance(34)
    assert "result" in rpc("matches.list", {}, credential=api_key)


def test_keys_and_tokens_of_one_account_share_one_quota(rpc: RpcCall, account: Account) -> None:
    _, first = issue_key(account, "test")
    _, second = issue_key(account, "live")
    token = rpc("tokens.create", {}, credential=first)["result"]["token"]  # 1
    rpc("matches.list", {}, credential=second)  # 2
    rpc("matches.list", {}, credential=token)  # 3
    rpc("auth", {}, credential=token)  # 4
    rpc("tokens.create", {}, credential=second)  # 5
    for credential in (first, second, token):
        assert error_code(rpc("matches.list", {}, credential=credential)) == "rate_limited"


def test_other_accounts_keep_their_own_quota(rpc: RpcCall, api_key: str) -> None:
    for _ in range(6):
        rpc("matches.list", {}, credential=api_key)
    _, other = issue_key(Account.objects.create(name="other", tier="starter"), "test")
    assert "result" in rpc("matches.list", {}, credential=other)


def test_the_rate_class_follows_the_account_not_the_tier(rpc: RpcCall) -> None:
    account = Account.objects.create(name="vip", tier="free", rate_limit_class="starter")
    _, secret = issue_key(account, "test")
    token = rpc("tokens.create", {}, credential=secret)["result"]["token"]
    assert jwt.decode(token, options={"verify_signature": False})["rlc"] == "starter"
    for _ in range(4):
        rpc("matches.list", {}, credential=token)  # the token inherits the class from its key
    assert error_code(rpc("matches.list", {}, credential=secret)) == "rate_limited"


def test_the_default_classes_follow_the_contract_table() -> None:
    from sportsproxy.sandbox.conf import DEFAULT_RATE_CLASSES

    table = {name: (c.requests_per_minute, c.subscriptions, c.connections) for name, c in DEFAULT_RATE_CLASSES.items()}
    assert table == {
        "free": (60, 5, 2),
        "starter": (300, 20, 5),
        "growth": (1200, 100, 20),
        "business": (6000, 500, 100),
    }


def test_an_account_quota_overrides_its_rate_class_for_keys_and_tokens(rpc: RpcCall, account: Account) -> None:
    account.requests_per_minute = 2
    account.save()
    _, secret = issue_key(account, "test")
    token = rpc("tokens.create", {}, credential=secret)["result"]["token"]  # 1
    assert "result" in rpc("matches.list", {}, credential=token)  # 2
    assert error_code(rpc("matches.list", {}, credential=token)) == "rate_limited"
    assert "limit of 2 " in rpc("matches.list", {}, credential=secret)["error"]["message"]


def test_a_changed_quota_is_in_force_at_once_and_the_minute_spent_still_counts(rpc: RpcCall, api_key: str) -> None:
    for _ in range(3):
        assert "result" in rpc("matches.list", {}, credential=api_key)
    Account.objects.filter(name="acme").update(requests_per_minute=4)
    assert "result" in rpc("matches.list", {}, credential=api_key)  # 4 of 4
    assert error_code(rpc("matches.list", {}, credential=api_key)) == "rate_limited"
    Account.objects.filter(name="acme").update(requests_per_minute=None)  # back to the class's 5
    assert error_code(rpc("matches.list", {}, credential=api_key)) == "rate_limited"  # the 6th of the minute


def test_a_tokens_request_reads_no_database(rpc: RpcCall, account: Account, django_assert_num_queries: Any) -> None:
    account.requests_per_minute = 3
    account.save()
    _, secret = issue_key(account, "test")
    token = rpc("tokens.create", {}, credential=secret)["result"]["token"]  # 1 of 3
    with django_assert_num_queries(0):  # a token keeps working while the database is away
        assert "result" in rpc("matches.list", {}, credential=token)  # 2 of 3
        assert "result" in rpc("matches.list", {}, credential=token)  # 3 of 3
        assert error_code(rpc("matches.list", {}, credential=token)) == "rate_limited"


def test_a_quota_changed_through_update_is_mirrored_by_mirror_all_quotas(rpc: RpcCall, account: Account) -> None:
    Account.objects.filter(pk=account.pk).update(requests_per_minute=7)  # no signal
    assert account_quota(account.public_id) is None  # the mirror still says "no quota of its own"
    mirror_all_quotas()
    assert account_quota(account.public_id) == 7


def test_a_tokens_quota_is_read_back_once_when_the_cache_has_lost_it(
    rpc: RpcCall, account: Account, django_assert_num_queries: Any
) -> None:
    account.requests_per_minute = 5
    account.save()
    _, secret = issue_key(account, "test")
    token = rpc("tokens.create", {}, credential=secret)["result"]["token"]
    cache.clear()  # a Redis restart, a flush, an eviction: the mirror and the minute's count are gone
    with django_assert_num_queries(2):  # the quota and the tokens ended early, read back and mirrored again
        answers = [rpc("matches.list", {}, credential=token)]
    with django_assert_num_queries(0):
        answers += [rpc("matches.list", {}, credential=token) for _ in range(11)]
    assert ["result" in answer for answer in answers] == [True] * 5 + [False] * 7
    assert {error_code(answer) for answer in answers[5:]} == {"rate_limited"}


def test_a_lost_mirror_while_the_database_is_away_counts_against_the_class_and_is_read_back_later(
    rpc: RpcCall, account: Account, caplog: pytest.LogCaptureFixture
) -> None:
    account.requests_per_minute = 1
    account.save()
    _, secret = issue_key(account, "test")
    token = rpc("tokens.create", {}, credential=secret)["result"]["token"]
    cache.clear()
    with connection.cursor() as cursor:  # the accounts' table away (rolled back with the test)
        cursor.execute(f"ALTER TABLE {Account._meta.db_table} RENAME TO away")
    assert "result" in rpc("matches.list", {}, credential=token)  # 1 of the class's 5, not an internal_error
    assert "neither the cache nor a reachable database" in caplog.text
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE away RENAME TO {Account._meta.db_table}")
    assert "limit of 1 " in rpc("matches.list", {}, credential=token)["error"]["message"]  # read back now


def test_no_quota_of_its_own_is_mirrored_too_so_it_is_read_back_once(
    rpc: RpcCall, api_key: str, django_assert_num_queries: Any
) -> None:
    token = rpc("tokens.create", {}, credential=api_key)["result"]["token"]
    cache.clear()
    with django_assert_num_queries(2):  # the quota and the tokens ended early
        assert "result" in rpc("matches.list", {}, credential=token)
    with django_assert_num_queries(0):  # the marker NO_QUOTA, not a missing mirror
        assert "result" in rpc("matches.list", {}, credential=token)
