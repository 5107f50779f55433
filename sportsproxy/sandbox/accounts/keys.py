"""API keys: issuing them, and recognising one on a request.

A key is `sk_live_` or `sk_test_` followed by 43 url-safe random characters. The
database keeps its SHA-256 only (a fast hash is right for 256 random bits), so a key is
shown once, at creation, and never again.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db.models import Q

from sportsproxy import service
from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.errors import unauthorized
from sportsproxy.sandbox.models import Account, ApiKey

KEY_PATTERN = service.API_KEY_PATTERN  # the key format, written once


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def looks_like_api_key(credential: str) -> bool:
    return credential.startswith("sk_")


def new_secret(env: str) -> str:
    return f"sk_{env}_{secrets.token_urlsafe(32)}"


def assign_secret(key: ApiKey, secret: str) -> None:
    """Set the key's environment, hash and hint from `secret` (the secret itself is not kept)."""
    match = KEY_PATTERN.match(secret)
    if match is None:
        raise ValueError("An API key is sk_live_ or sk_test_ followed by at least 32 url-safe characters.")
    key.env = match.group(1)
    key.secret_hash = hash_secret(secret)
    key.last_four = secret[-4:]


def issue_key(account: Account, env: str) -> tuple[ApiKey, str]:
    """Create an active key for `account`; returns the row and the secret (its only copy)."""
    secret = new_secret(env)
    return register_key(account, secret), secret


def register_key(account: Account, secret: str) -> ApiKey:
    """Store an existing secret as an active key of `account` (used to restore a development site's key)."""
    key = ApiKey(account=account)
    assign_secret(key, secret)
    key.save()
    return key


def authenticate_key(secret: str) -> Caller:
    """The caller behind an API key; `unauthorized` for a malformed, unknown or revoked key."""
    if KEY_PATTERN.match(secret) is None:
        raise unauthorized(
            "Malformed API key: expected sk_live_ or sk_test_ followed by at least 32 url-safe characters.",
            "malformed_credential",
        )
    # A fresh read on every request: revocation must take effect on the very next call.
    key = ApiKey.objects.select_related("account").filter(secret_hash=hash_secret(secret)).first()
    if key is None:
        raise unauthorized("Unknown API key. Check the key, or create one in the dashboard.", "unknown_key")
    if not key.is_active:
        raise unauthorized(
            f"API key {key.public_id} has been revoked. Use an active key of this account.", "revoked_key"
        )
    _touch_last_used(key)
    return Caller(
        kind="api_key",
        account_id=key.account.public_id,
        key_id=key.public_id,
        tier=key.account.tier,
        rate_class=key.account.effective_rate_class,
        env=key.env,
        expires_at=None,
        requests_per_minute=key.account.requests_per_minute,
    )


def _touch_last_used(key: ApiKey) -> None:
    """Record use at most once per interval, so a busy key costs no write per request."""
    now = clock.now()
    stale_before = now - timedelta(seconds=conf.last_used_interval())
    if key.last_used_at is not None and key.last_used_at > stale_before:
        return
    ApiKey.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale_before), pk=key.pk).update(
        last_used_at=now
    )


def key_is_active(key_id: str) -> bool:
    """Whether the key with this public id is still active (read fresh: revocation is immediate)."""
    return ApiKey.objects.filter(public_id=key_id, state=ApiKey.State.ACTIVE).exists()
