"""The default permission hook of the mint route (replace it with SPORTS_TOKEN_PERMISSION)."""

from __future__ import annotations

from django.http import HttpRequest


def is_active_user(request: HttpRequest) -> bool:
    """Any logged-in, active user may get a token."""
    return bool(request.user.is_authenticated and request.user.is_active)
