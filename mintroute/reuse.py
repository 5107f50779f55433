"""Token reuse: the last token given to one login, remembered in a signed, HttpOnly cookie.

While it has more than half its life left the route gives it again instead of minting, so
reloads, tabs and bursts cost one mint. The cookie, not the session, holds it: reusing costs no
database write and no cache operation, and a mobile app with a cookie jar gets it too.

A remembered token belongs to one login: the record carries a digest of the user's key, how they
authenticated (the session's key and this login's nonce, or the credential a token-authenticated
app sent) and their password's session hash. A logout, a new login or a password change changes
the digest, and the route mints afresh. The nonce is what tells apart two logins of the same user
in one browser: Django keeps the session key when the same user logs in again without logging out,
so `note_login` (connected to `user_logged_in` by the app) writes a new one at every login.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.crypto import salted_hmac

TOKEN_COOKIE = "sports_token"  # noqa: S105 - a cookie name, not a secret
TOKEN_COOKIE_SALT = "mintroute.token"  # noqa: S105 - a namespace for the signature
LOGIN_NONCE = "_mintroute_login"  # the session key holding this login's nonce

new_nonce: Callable[[], str] = lambda: secrets.token_urlsafe(16)  # noqa: E731 - replaceable by tests

now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731 - replaced by tests to move time


def login_of(request: HttpRequest, credential: object = None) -> str:
    """A digest of this login. `credential` is what a non-session authentication class returned
    as `request.auth` (a DRF token, a JWT); None means the Django session authenticated."""
    user: Any = request.user
    if credential is None:
        session = getattr(request, "session", None)
        how = f"{session.session_key or ''}\0{session.get(LOGIN_NONCE, '')}" if session is not None else ""
    else:
        how = str(credential)
    password_hash = user.get_session_auth_hash() if hasattr(user, "get_session_auth_hash") else ""
    return salted_hmac(TOKEN_COOKIE_SALT, f"{user.pk}\0{how}\0{password_hash}", algorithm="sha256").hexdigest()


def note_login(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """`user_logged_in` receiver: every login, even the same user's again in the same session, gets a
    nonce of its own, so the route never hands one login's token to the next."""
    session = getattr(request, "session", None)
    if session is not None:
        session[LOGIN_NONCE] = new_nonce()


def reusable_token(request: HttpRequest, login: str) -> dict[str, str] | None:
    """The token `login` was last given, while more than half its ttl is left; else None."""
    stored = remembered_token(request, login)
    if stored is None:
        return None
    try:
        expires_at = datetime.fromisoformat(stored["expiresAt"])
        half_life = timedelta(seconds=stored["ttl"] / 2)
    except (TypeError, KeyError, ValueError):
        return None
    if expires_at.tzinfo is None:  # written by an older release: a time without an offset is no time
        return None
    if expires_at - now() <= half_life:
        return None
    return {"token": stored["token"], "expiresAt": stored["expiresAt"]}


def remembered_token(request: HttpRequest, login: str) -> dict[str, Any] | None:
    """The record in this browser's cookie, if it is intact and belongs to `login`."""
    raw = request.get_signed_cookie(TOKEN_COOKIE, default=None, salt=TOKEN_COOKIE_SALT)
    try:
        stored = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(stored, dict) or stored.get("login") != login:
        return None
    return stored


def remember(response: HttpResponseBase, body: dict[str, str], ttl: int, login: str) -> None:
    """Keep a newly minted token for this login's next calls (any tab)."""
    response.set_signed_cookie(
        TOKEN_COOKIE,
        json.dumps({**body, "ttl": ttl, "login": login}),
        salt=TOKEN_COOKIE_SALT,
        max_age=ttl,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Strict",
    )
