"""Turning a presented credential (Bearer header or `auth` params) into a Caller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sportsproxy.sandbox.accounts.caller import Caller
from sportsproxy.sandbox.accounts.keys import authenticate_key, looks_like_api_key
from sportsproxy.sandbox.accounts.tokens import authenticate_token
from sportsproxy.sandbox.errors import invalid_params, unauthorized

JWT_SEGMENTS = 3  # header.payload.signature

BROWSER_KEY_REFUSED = (
    "API keys are refused from browsers (the request carries an Origin header). "
    "Keep the key on your backend and give the browser a token minted with tokens.create."
)


def bearer_credential(authorization: str | None) -> str:
    """The credential of an `Authorization: Bearer <API key or JWT>` header."""
    if not authorization:
        raise unauthorized(
            "Missing Authorization header; send Authorization: Bearer <API key or token>.", "missing_credential"
        )
    scheme, _, credential = authorization.partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        raise unauthorized(
            "Malformed Authorization header; expected Authorization: Bearer <API key or token>.", "malformed_credential"
        )
    return credential


def authenticate_bearer(authorization: str | None, *, from_browser: bool) -> Caller:
    """The caller named by an `Authorization: Bearer <API key or JWT>` header."""
    credential = bearer_credential(authorization)
    if looks_like_api_key(credential):
        return authenticate_api_key(credential, from_browser=from_browser)
    return authenticate_shaped_token(credential)


def authenticate_shaped_token(credential: str) -> Caller:
    """A token's caller; a value shaped like neither a key nor a JWT is malformed, not an invalid token."""
    if len(credential.split(".")) != JWT_SEGMENTS:
        raise unauthorized(
            "Malformed credential: neither an API key (sk_...) nor a token (three dot-separated segments).",
            "malformed_credential",
        )
    return authenticate_token(credential)


def authenticate_api_key(secret: str, *, from_browser: bool) -> Caller:
    if from_browser:
        raise unauthorized(BROWSER_KEY_REFUSED, "key_from_browser")
    return authenticate_key(secret)


def auth_params_credential(params: Mapping[str, Any]) -> str:
    """The credential in `auth` params: exactly one of `{"apiKey": ...}` or `{"token": ...}`."""
    if set(params) not in ({"apiKey"}, {"token"}):
        raise invalid_params('auth takes exactly one of {"apiKey": "sk_..."} or {"token": "<JWT>"}.')
    ((name, credential),) = params.items()
    if not isinstance(credential, str) or not credential:
        raise invalid_params(f"{name} must be a non-empty string.")
    return credential


def authenticate_auth_params(params: Mapping[str, Any], *, from_browser: bool) -> Caller:
    """The caller named by `auth` params (the WebSocket's first frame)."""
    credential = auth_params_credential(params)
    if "apiKey" in params:
        return authenticate_api_key(credential, from_browser=from_browser)
    if looks_like_api_key(credential):
        raise unauthorized(
            "That is an API key, not a token: send it as apiKey, and only from a server.", "malformed_credential"
        )
    return authenticate_shaped_token(credential)
