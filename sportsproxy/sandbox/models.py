"""The sandbox's accounts and API keys: what the service's dashboard manages."""

from __future__ import annotations

import secrets

from django.db import models

from sportsproxy.sandbox import clock
from sportsproxy.sandbox.conf import TIERS


def _public_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def new_account_id() -> str:
    return _public_id("acct")


def new_key_id() -> str:
    return _public_id("key")


TIER_CHOICES = [(tier, tier.title()) for tier in TIERS]


class Environment(models.TextChoices):
    LIVE = "live", "live (production markets)"
    TEST = "test", "test (sandbox markets)"


class Account(models.Model):
    """A customer of the service. Its keys, and the tokens they mint, share its limits."""

    public_id = models.CharField(max_length=40, unique=True, default=new_account_id, editable=False)
    name = models.CharField(max_length=100, unique=True)
    tier = models.CharField(max_length=16, choices=TIER_CHOICES, default="starter")
    rate_limit_class = models.CharField(
        max_length=16,
        choices=TIER_CHOICES,
        blank=True,
        help_text="Limits to apply (requests/minute, subscriptions, connections). Blank: those of the tier.",
    )
    requests_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="This account's requests-per-minute quota. Blank: that of its rate-limit class.",
    )
    created_at = models.DateTimeField(default=clock.now, editable=False)

    def __str__(self) -> str:
        return f"{self.name} ({self.tier})"

    @property
    def effective_rate_class(self) -> str:
        return self.rate_limit_class or self.tier


class ApiKey(models.Model):
    """A long-lived secret key. Only the SHA-256 of the secret is stored."""

    class State(models.TextChoices):
        ACTIVE = "active"
        REVOKED = "revoked"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="keys")
    public_id = models.CharField(max_length=40, unique=True, default=new_key_id, editable=False, verbose_name="key id")
    env = models.CharField(max_length=4, choices=Environment.choices, default=Environment.TEST)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    last_four = models.CharField(max_length=4, editable=False)
    state = models.CharField(max_length=8, choices=State.choices, default=State.ACTIVE, editable=False)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.public_id} (sk_{self.env}_…{self.last_four}, {self.state})"

    @property
    def is_active(self) -> bool:
        return self.state == self.State.ACTIVE

    def revoke(self) -> None:
        """Revoke now; the key's next request fails. Tokens it minted live on to their `exp`."""
        if self.is_active:
            self.state = self.State.REVOKED
            self.revoked_at = clock.now()
            self.save(update_fields=["state", "revoked_at"])


class EndedToken(models.Model):
    """A token ended before its `exp` (the control endpoint `/control/v1/tokens/expire`, or a
    page's debug helper). Kept in the database, not only in a cache: the ending holds after a restart and in every
    process, and the sockets that authenticated with the token close on it (realtime/revocation.py)."""

    token_id = models.CharField(max_length=64, unique=True, editable=False)  # the token's `jti`
    expires_at = models.DateTimeField(editable=False)  # the token's own `exp`: past it, the row adds nothing
    ended_at = models.DateTimeField(default=clock.now, editable=False)

    def __str__(self) -> str:
        return f"token {self.token_id} ended at {self.ended_at.isoformat()}"
