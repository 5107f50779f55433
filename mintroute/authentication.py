"""Session authentication that says 401 to strangers and names CSRF failures."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request

from mintroute.errors import CsrfFailed


class SessionAuthentication401(SessionAuthentication):
    """DRF's session authentication (CSRF enforced for logged-in users), with two changes:
    a `WWW-Authenticate` challenge, so anonymous callers get 401 rather than 403, and CSRF
    failures raised as `CsrfFailed` so they answer `csrf_failed`."""

    def authenticate_header(self, request: Request) -> str:
        return "Session"

    def enforce_csrf(self, request: Request) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied as refusal:
            raise CsrfFailed(refusal.detail) from None
