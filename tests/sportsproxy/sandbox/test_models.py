from __future__ import annotations

from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.conf import ENVIRONMENTS, TIERS
from sportsproxy.sandbox.models import Account, ApiKey, Environment


def test_model_choices_match_the_service_tiers_and_environments() -> None:
    for field in ("tier", "rate_limit_class"):
        assert tuple(value for value, _ in Account._meta.get_field(field).choices) == TIERS
    assert tuple(Environment.values) == ENVIRONMENTS


def test_the_rate_class_defaults_to_the_tier() -> None:
    assert Account(name="a", tier="growth").effective_rate_class == "growth"
    assert Account(name="b", tier="free", rate_limit_class="business").effective_rate_class == "business"


def test_revoking_twice_keeps_the_first_revocation_time(account: Account, clock) -> None:  # type: ignore[no-untyped-def]
    key, _ = issue_key(account, "test")
    key.revoke()
    first = key.revoked_at
    clock.advance(100)
    ApiKey.objects.get(pk=key.pk).revoke()
    assert ApiKey.objects.get(pk=key.pk).revoked_at == first
    assert "…" in str(key)
    assert key.last_four in str(key)
