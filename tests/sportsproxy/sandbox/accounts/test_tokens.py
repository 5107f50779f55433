"""Tokens on the real endpoint: minting, claims, expiry, and every kind of forged token."""

from __future__ import annotations

import base64
import json
from typing import Any

import jwt
import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import override_settings

from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.accounts.tokens import expire_early
from sportsproxy.sandbox.clock import ManualClock
from sportsproxy.sandbox.models import ApiKey, EndedToken
from tests.conftest import RpcCall
from tests.support import error_code

OTHER_SECRET = "another-secret-of-at-least-thirty-two-bytes!"


@pytest.fixture
def token(rpc: RpcCall, api_key: str, clock: ManualClock) -> str:
    minted: str = rpc("tokens.create", {"ttl": 60}, credential=api_key)["result"]["token"]
    return minted


def claims_of(token: str) -> dict[str, Any]:
    decoded: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return decoded


def sign(claims: dict[str, Any], key: str | None = None, **header: Any) -> str:
    return jwt.encode(claims, key or settings.SPORTS_SANDBOX_SIGNING_KEY, algorithm="HS256", headers=header or None)


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def test_tokens_create_returns_a_token_response(rpc: RpcCall, api_key: str, clock: ManualClock) -> None:
    result = rpc("tokens.create", {"ttl": 900}, credential=api_key)["result"]
    assert set(result) == {"token", "expiresAt"}
    assert result["expiresAt"] == "2026-03-14T15:24:26+00:00"


def test_the_default_ttl_is_600_seconds(rpc: RpcCall, api_key: str, clock: ManualClock) -> None:
    claims = claims_of(rpc("tokens.create", {}, credential=api_key)["result"]["token"])
    assert claims["exp"] - claims["iat"] == 600


@pytest.mark.parametrize("ttl", [60, 61, 3600, 86399, 86400])
def test_exp_minus_iat_equals_the_ttl(rpc: RpcCall, api_key: str, ttl: int) -> None:
    claims = claims_of(rpc("tokens.create", {"ttl": ttl}, credential=api_key)["result"]["token"])
    assert claims["exp"] - claims["iat"] == ttl


def test_a_token_carries_the_required_claims_and_never_the_secret(rpc: RpcCall, api_key: str) -> None:
    token = rpc("tokens.create", {}, credential=api_key)["result"]["token"]
    claims = claims_of(token)
    key = ApiKey.objects.get(secret_hash=hash_secret(api_key))
    assert claims["sub"] == key.public_id
    assert claims["acct"] == key.account.public_id
    assert {"iss", "aud", "sub", "acct", "tier", "env", "iat", "exp", "jti"} <= set(claims)
    assert (claims["tier"], claims["rlc"], claims["env"]) == ("starter", "starter", "test")
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    assert api_key not in token
    assert api_key[8:] not in json.dumps(claims)


def test_every_token_has_its_own_jti(rpc: RpcCall, api_key: str) -> None:
    tokens = [rpc("tokens.create", {}, credential=api_key)["result"]["token"] for _ in range(3)]
    assert len({claims_of(token)["jti"] for token in tokens}) == 3


def test_a_token_authenticates_and_inherits_tier_and_env(rpc: RpcCall, token: str) -> None:
    result = rpc("auth", {}, credential=token)["result"]
    assert result == {"ok": True, "expiresAt": "2026-03-14T15:10:26+00:00", "tier": "starter", "env": "test"}
    assert "result" in rpc("matches.list", {}, credential=token)


def test_a_token_works_until_the_second_before_expiry_and_fails_at_it(
    rpc: RpcCall, token: str, clock: ManualClock
) -> None:
    clock.advance(59)
    assert "result" in rpc("matches.list", {}, credential=token)
    clock.advance(1)
    answer = rpc("matches.list", {}, credential=token)
    assert error_code(answer) == "unauthorized"
    assert "expired" in answer["error"]["message"]


def test_an_early_end_is_kept_in_the_database_and_outlives_the_cache(
    rpc: RpcCall, token: str, clock: ManualClock
) -> None:
    """What a restart of the standalone sandbox does to its cache (a fresh one), a flush does here."""
    assert expire_early(token)
    assert EndedToken.objects.filter(token_id=claims_of(token)["jti"]).count() == 1
    cache.clear()
    answer = rpc("matches.list", {}, credential=token)
    assert error_code(answer) == "unauthorized"
    assert "ended early" in answer["error"]["message"]
    assert not expire_early(token)  # no longer a valid token


def test_a_token_cannot_mint_tokens(rpc: RpcCall, token: str) -> None:
    answer = rpc("tokens.create", {"ttl": 600}, credential=token)
    assert error_code(answer) == "forbidden"


def test_a_token_keeps_working_after_its_key_is_revoked_until_it_expires(
    rpc: RpcCall, api_key: str, token: str, clock: ManualClock
) -> None:
    ApiKey.objects.get(secret_hash=hash_secret(api_key)).revoke()
    assert error_code(rpc("matches.list", {}, credential=api_key)) == "unauthorized"
    assert "result" in rpc("matches.list", {}, credential=token)
    clock.advance(60)
    assert error_code(rpc("matches.list", {}, credential=token)) == "unauthorized"


def test_a_token_cannot_raise_its_tier(rpc: RpcCall, token: str) -> None:
    header, _payload, signature = token.split(".")
    raised = b64({**claims_of(token), "tier": "business"})
    assert error_code(rpc("auth", {}, credential=f"{header}.{raised}.{signature}")) == "unauthorized"


def test_a_token_cannot_outlive_its_ttl(rpc: RpcCall, token: str) -> None:
    header, _, signature = token.split(".")
    extended = b64({**claims_of(token), "exp": claims_of(token)["exp"] + 86400})
    assert error_code(rpc("auth", {}, credential=f"{header}.{extended}.{signature}")) == "unauthorized"


def forged_tokens(token: str) -> dict[str, str]:
    claims = claims_of(token)
    header, payload, signature = token.split(".")
    without_exp = {name: value for name, value in claims.items() if name != "exp"}
    return {
        "alg none": f"{b64({'alg': 'none', 'typ': 'JWT'})}.{payload}.",
        "alg noNE": f"{b64({'alg': 'noNE', 'typ': 'JWT'})}.{payload}.",
        "alg HS512": jwt.encode(claims, settings.SPORTS_SANDBOX_SIGNING_KEY + "x" * 32, algorithm="HS512"),
        "re-signed with another secret": sign(claims, OTHER_SECRET),
        "payload edited, not re-signed": f"{header}.{b64({**claims, 'acct': 'acct_other'})}.{signature}",
        "signature stripped": f"{header}.{payload}.",
        "truncated": token[:-10],
        "two segments": f"{header}.{payload}",
        "non-base64": "###.###.###",
        "junk": "x" * 10_000,
        "missing exp": sign(without_exp),
        "wrong aud": sign({**claims, "aud": "someone-else"}),
        "wrong iss": sign({**claims, "iss": "someone-else"}),
        "kid header": sign(claims, kid="../../etc/passwd"),
        "jku header": sign(claims, jku="https://attacker.example/keys.json"),
        "x5u header": sign(claims, x5u="https://attacker.example/cert.pem"),
        "alg RS256": f"{b64({'alg': 'RS256', 'typ': 'JWT'})}.{payload}.{signature}",
        "alg ES256": f"{b64({'alg': 'ES256', 'typ': 'JWT'})}.{payload}.{signature}",
        "expired": sign({**claims, "iat": claims["iat"] - 3600, "exp": claims["exp"] - 3600}),
        "string exp": sign({**claims, "exp": str(claims["exp"])}),
        "unknown tier": sign({**claims, "tier": "platinum"}),
    }


FORGERIES = [
    "alg none", "alg noNE", "alg HS512", "re-signed with another secret", "payload edited, not re-signed",
    "signature stripped", "truncated", "two segments", "non-base64", "junk", "missing exp", "wrong aud",
    "wrong iss", "kid header", "jku header", "x5u header", "alg RS256", "alg ES256", "expired", "string exp",
    "unknown tier",
]  # fmt: skip


def test_every_forgery_is_listed(token: str) -> None:
    assert sorted(forged_tokens(token)) == sorted(FORGERIES)


@pytest.mark.parametrize("kind", FORGERIES)
def test_a_forged_or_broken_token_is_unauthorized(rpc: RpcCall, token: str, kind: str) -> None:
    forged = forged_tokens(token)[kind]
    answer = rpc("matches.list", {}, credential=forged)
    assert error_code(answer) == "unauthorized", kind
    assert answer["error"]["data"] == {"reason": EXPECTED_REASONS.get(kind, "invalid_token")}, kind


# Not three dot-separated segments: not shaped like a token at all.
EXPECTED_REASONS = {"expired": "expired_token", "two segments": "malformed_credential", "junk": "malformed_credential"}


def test_a_token_issued_in_the_future_beyond_the_leeway_is_unauthorized(
    rpc: RpcCall, token: str, clock: ManualClock
) -> None:
    claims = claims_of(token)
    assert "result" in rpc("auth", {}, credential=sign({**claims, "iat": claims["iat"] + 5}))
    future = sign({**claims, "iat": claims["iat"] + 6, "exp": claims["exp"] + 6})
    assert error_code(rpc("auth", {}, credential=future)) == "unauthorized"
    not_before = sign({**claims, "nbf": claims["iat"] + 30})
    assert error_code(rpc("auth", {}, credential=not_before)) == "unauthorized"


def test_a_signing_key_shorter_than_32_bytes_is_refused(rpc: RpcCall, api_key: str) -> None:
    with override_settings(SPORTS_SANDBOX_SIGNING_KEY="too-short"):
        assert error_code(rpc("tokens.create", {}, credential=api_key)) == "internal_error"


def test_a_token_passed_as_an_api_key_is_unauthorized(rpc: RpcCall, api_key: str, token: str) -> None:
    assert error_code(rpc("auth", {"apiKey": token}, credential=token)) == "unauthorized"


def test_an_api_key_passed_as_a_token_is_unauthorized(rpc: RpcCall, api_key: str) -> None:
    answer = rpc("auth", {"token": api_key}, credential=api_key)  # the slot says token, the value is a key
    assert error_code(answer) == "unauthorized"
    assert "apiKey" in answer["error"]["message"]
