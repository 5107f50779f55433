"""The route's default authentication: the Django session, with CSRF, answering 401 to strangers.

SPORTS_TOKEN_AUTHENTICATION lists DRF authentication classes by dotted path; this one is the
default, `"mintroute.authentication.SessionAuthentication"`. A mobile backend lists
`"rest_framework.authentication.TokenAuthentication"` (or simplejwt's `JWTAuthentication`) alone or
beside it. Only a request authenticated from such an app's `Authorization` header (a scheme other
than Basic, Digest or Negotiate) skips the CSRF check (mintroute.admission).
"""

from __future__ import annotations

from rest_framework import authentication
from rest_framework.request import Request


class SessionAuthentication(authentication.SessionAuthentication):
    """DRF's session authentication (CSRF enforced for logged-in users) with a `WWW-Authenticate`
    challenge, so that a request nobody authenticates is answered 401, not 403 (DRF's rule)."""

    def authenticate_header(self, request: Request) -> str:
        return "Session"
