"""The dashboard's powers, as plain functions: what the control endpoints and the start-up call.

Each raises `DashboardError` with a sentence that says how to fix the request.
"""

from __future__ import annotations

from django.db import transaction

from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.accounts.tokens import expire_early
from sportsproxy.sandbox.conf import ENVIRONMENTS, TIERS
from sportsproxy.sandbox.models import Account, ApiKey


class DashboardError(Exception):
    """A request the dashboard refuses; `status` is the HTTP status the control endpoint answers."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def create_key(account_name: str, tier: str = "growth", env: str = "test") -> str:
    """A new active key of the account (created with `tier` if it does not exist); returns its secret."""
    if tier not in TIERS:
        raise DashboardError(400, "bad_request", f"tier must be one of {', '.join(TIERS)}; got {tier!r}.")
    if env not in ENVIRONMENTS:
        raise DashboardError(400, "bad_request", f"env must be one of {', '.join(ENVIRONMENTS)}; got {env!r}.")
    with transaction.atomic():
        account, _ = Account.objects.get_or_create(name=account_name, defaults={"tier": tier})
        if account.tier != tier:
            raise DashboardError(
                409,
                "tier_mismatch",
                f"Account {account_name!r} exists with tier {account.tier!r}. "
                f"Pass tier={account.tier!r}, or use another account name.",
            )
        _, secret = issue_key(account, env)
    return secret


def revoke(secret: str) -> None:
    """Revoke the key with this secret; its next request is refused (tokens it minted live on)."""
    key = ApiKey.objects.filter(secret_hash=hash_secret(secret)).first()
    if key is None:
        raise DashboardError(
            404, "unknown_key", "No key has this secret. Pass a secret that create_key or api_key gave."
        )
    key.revoke()


def set_quota(account_name: str, requests_per_minute: int) -> None:
    """The account's requests-per-minute quota from now on; the minute's spent requests still count."""
    account = Account.objects.filter(name=account_name).first()
    if account is None:
        raise DashboardError(
            404, "unknown_account", f"No account named {account_name!r}. create_key(account) creates one."
        )
    account.requests_per_minute = requests_per_minute
    account.save(update_fields=["requests_per_minute"])  # its post_save mirrors it for tokens


def expire_token(token: str) -> None:
    """Make a valid token fail as expired from now on."""
    if not expire_early(token):
        raise DashboardError(
            409,
            "token_not_valid",
            "That token is not a valid token of this sandbox (already expired, altered, or signed by another server).",
        )
