"""Error reports (debug pages, mailed reports) that never show an API key or a token.

Django's default filter hides settings and request headers whose names look secret, but
not local variables: a frame holding the API key (the SDK client's headers, say) would be
printed in full. This filter also hides every frame variable whose text contains an API
key, a JWT, or the configured SPORTS_API_KEY values.
"""

from __future__ import annotations

import re
from collections.abc import ItemsView
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.views.debug import SafeExceptionReporterFilter

SECRET_SHAPES = re.compile(r"sk_(?:live|test)_[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


class SecretsHidingReporterFilter(SafeExceptionReporterFilter):
    def get_safe_request_meta(self, request: HttpRequest) -> dict[str, Any]:
        meta: dict[str, Any] = super().get_safe_request_meta(request)
        for name in ("HTTP_AUTHORIZATION", "HTTP_COOKIE", "HTTP_X_CSRFTOKEN"):
            if name in meta:
                meta[name] = self.cleansed_substitute
        return meta

    def get_traceback_frame_variables(self, request: HttpRequest | None, tb_frame: Any) -> ItemsView[str, Any]:
        variables = super().get_traceback_frame_variables(request, tb_frame)
        return {name: self._hide_secrets(value) for name, value in variables}.items()

    def _hide_secrets(self, value: Any) -> Any:
        if value == self.cleansed_substitute:
            return value
        try:
            text = repr(value)
        except Exception:  # a repr that fails cannot leak either
            return value
        keys = [key for key in (settings.SPORTS_API_KEY, getattr(settings, "SPORTS_API_KEY_PREVIOUS", "")) if key]
        if SECRET_SHAPES.search(text) or any(key in text for key in keys):
            return self.cleansed_substitute
        return value
