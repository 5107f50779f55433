"""Real DRF authentication classes that fail the way integrators' classes do, for the 503 row."""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request


class BrokenAuthentication(BaseAuthentication):
    """A class with a bug: it raises something DRF does not know as a refusal."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        raise RuntimeError("the identity provider's client was not configured")

    def authenticate_header(self, request: Request) -> str:
        return "Device"


class MissingAttributeAuthentication(BaseAuthentication):
    """An AttributeError inside a class (DRF wraps it): the shape of `'Token' has no attribute 'objects'`."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        return object().objects.get()  # type: ignore[attr-defined,no-any-return]
