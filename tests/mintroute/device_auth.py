"""A real DRF authentication class standing in for a mobile app's token header, so that the
route's SPORTS_TOKEN_AUTHENTICATION can be driven here without another app's models.

`Authorization: Device <username>`; an unknown name fails authentication. (tests/standalone
drives DRF's own TokenAuthentication and simplejwt in foreign sites.)
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

KEYWORD = "Device"


class DeviceAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, str] | None:
        keyword, _, name = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if keyword != KEYWORD:
            return None
        user = User.objects.filter(username=name, is_active=True).first()
        if user is None:
            raise AuthenticationFailed("Unknown device.")
        return user, f"device:{name}"

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD
