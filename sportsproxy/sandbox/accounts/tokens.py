"""Short-lived JWTs: minting them for an API key, and verifying them on a request.

The algorithm is pinned (HS256, never read from the token's header), every claim is
required, and expiry is checked against the sandbox clock rather than PyJWT's own
wall-clock read, so tests can move time exactly.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.core.cache import cache
from django.db import DatabaseError

from sportsproxy.sandbox import clock, conf
from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.errors import RpcError, unauthorized
from sportsproxy.sandbox.models import EndedToken

REQUIRED_CLAIMS = ("iss", "aud", "sub", "acct", "tier", "rlc", "env", "iat", "exp", "jti")
ALLOWED_HEADER = {"alg": conf.JWT_ALGORITHM, "typ": "JWT"}

# Enforces PyJWT's minimum HMAC key length (32 bytes for HS256) on sign and verify.
_jwt = jwt.PyJWT(options={"enforce_minimum_key_length": True})
# Set once the cache mirrors every token ended early: without it (a new or flushed cache), the mirror is
# read back from the database.
MIRRORED = "sandbox:expired-early:mirrored"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MintedToken:
    token: str
    expires_at: datetime

    def as_json(self) -> dict[str, str]:
        return {"token": self.token, "expiresAt": self.expires_at.isoformat()}


def mint(caller: Caller, ttl: int) -> MintedToken:
    """Sign a token for an API-key caller, inheriting its identity, tier and rate class."""
    issued_at = int(clock.now().timestamp())
    expires_at = issued_at + ttl
    claims = {
        "iss": conf.jwt_issuer(),
        "aud": conf.jwt_audience(),
        "sub": caller.key_id,
        "acct": caller.account_id,
        "tier": caller.tier,
        "rlc": caller.rate_class,
        "env": caller.env,
        "iat": issued_at,
        "exp": expires_at,
        "jti": secrets.token_urlsafe(16),
    }
    if cache.get(MIRRORED) is None:  # a key's request reads the database anyway: its tokens' won't need to
        mirror_ended_tokens()
    token = _jwt.encode(claims, conf.signing_key(), algorithm=conf.JWT_ALGORITHM)
    return MintedToken(token=token, expires_at=datetime.fromtimestamp(expires_at, UTC))


def authenticate_token(token: str) -> Caller:
    """The caller behind a JWT; `unauthorized` for anything expired, tampered or foreign."""
    claims = _verified_claims(token)
    now = clock.now().timestamp()
    if now >= claims["exp"]:
        raise unauthorized("Token expired. Fetch a fresh one from your backend's mint route.", "expired_token")
    if claims["iat"] > now + conf.jwt_leeway() or claims.get("nbf", 0) > now + conf.jwt_leeway():
        raise unauthorized("Token is not valid yet: its iat or nbf lies in the future.", "invalid_token")
    if ended_early(claims["jti"]):
        raise unauthorized(
            "Token expired (ended early by the sandbox). Fetch a fresh one from your mint route.", "expired_token"
        )
    return Caller(
        kind="token",
        account_id=claims["acct"],
        key_id=claims["sub"],
        tier=claims["tier"],
        rate_class=claims["rlc"],
        env=claims["env"],
        expires_at=datetime.fromtimestamp(claims["exp"], UTC),
        token_id=claims["jti"],
    )


def expire_early(token: str) -> bool:
    """Sandbox-only testing aid: make a valid token fail as expired from now on (False if it was not valid).

    Written to the database (EndedToken), so the end survives a restart and reaches every process and the
    sockets the token authenticated (realtime/revocation.py), and to the cache's mirror of early ends."""
    try:
        caller = authenticate_token(token)
    except RpcError:
        return False
    assert caller.expires_at is not None
    assert caller.token_id is not None
    EndedToken.objects.get_or_create(token_id=caller.token_id, defaults={"expires_at": caller.expires_at})
    _mirror(caller.token_id, caller.expires_at.timestamp())
    return True


def ended_early(token_id: str) -> bool:
    """Whether the token `token_id` (its `jti`) was ended early, read from the cache's mirror: no database
    while the mirror is whole, as for the quota (accounts/quota.py). A cache that lost it (a restart, a
    flush, an eviction) has the mirror read back once; with the database away too, the token works."""
    if cache.get(_ended_key(token_id)):
        return True
    if cache.get(MIRRORED) is None:
        try:
            mirror_ended_tokens()
        except DatabaseError:
            logger.warning("Tokens ended early are in neither the cache nor a reachable database.")
            return False
        return bool(cache.get(_ended_key(token_id)))
    return False


def mirror_ended_tokens() -> None:
    """Mirror every token ended early that has not reached its `exp` yet (once per cache: MIRRORED)."""
    now = clock.now()
    for token_id, expires_at in EndedToken.objects.filter(expires_at__gt=now).values_list("token_id", "expires_at"):
        _mirror(token_id, expires_at.timestamp())
    cache.set(MIRRORED, True, timeout=None)


def ended_among(token_ids: list[str]) -> list[str]:
    """Those of `token_ids` that were ended early (one query: the socket watcher's)."""
    return list(EndedToken.objects.filter(token_id__in=token_ids).values_list("token_id", flat=True))


def _mirror(token_id: str, expires_at: float) -> None:
    seconds_left = max(1, int(expires_at - clock.now().timestamp()) + 1)
    cache.set(_ended_key(token_id), True, timeout=seconds_left)


def _ended_key(token_id: str) -> str:
    return f"sandbox:expired-early:{token_id}"


def _verified_claims(token: str) -> dict[str, Any]:
    try:
        header = jwt.get_unverified_header(token)
        if header != ALLOWED_HEADER:
            raise unauthorized(
                "Invalid token: unexpected header (only alg HS256 and typ JWT are accepted).", "invalid_token"
            )
        claims: dict[str, Any] = _jwt.decode(
            token,
            conf.signing_key(),
            algorithms=[conf.JWT_ALGORITHM],
            issuer=conf.jwt_issuer(),
            audience=conf.jwt_audience(),
            options={
                "require": list(REQUIRED_CLAIMS),
                # Time claims are checked against the sandbox clock in authenticate_token.
                "verify_exp": False,
                "verify_iat": False,
                "verify_nbf": False,
            },
        )
    except jwt.InvalidTokenError as error:
        raise unauthorized(f"Invalid token: {error}.", "invalid_token") from None
    if not _claims_well_typed(claims):
        raise unauthorized("Invalid token: claims of the wrong type or value.", "invalid_token")
    return claims


def _claims_well_typed(claims: dict[str, Any]) -> bool:
    strings = all(isinstance(claims[name], str) for name in ("sub", "acct", "tier", "rlc", "env", "jti"))
    times = all(type(claims[name]) is int for name in ("iat", "exp"))
    ttl_ok = times and 0 < claims["exp"] - claims["iat"] <= conf.TTL_MAX
    known = (
        claims.get("tier") in conf.TIERS and claims.get("rlc") in conf.TIERS and claims.get("env") in conf.ENVIRONMENTS
    )
    return strings and times and ttl_ok and known and type(claims.get("nbf", 0)) is int
