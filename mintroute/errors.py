"""The mint route's refusals: one exception carrying status, code, message and headers, answered
as `{"error": code, "message": message}`.

In production (DEBUG off) an answer never describes the site's configuration: no setting's name,
check id, dotted path or hint. `for_caller` picks the sentence a caller may read; the detail goes
to the log.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse, JsonResponse

from mintroute.conf import AUTHENTICATION_APPS_ID
from sportsproxy.django.problems import SettingsError

logger = logging.getLogger(__name__)

AUTHENTICATION_RETRY_AFTER = 5  # seconds: a database or session store outage is usually short


class RouteError(Exception):
    """A refusal of the mint route (401, 403, 400, 429, 502, 503, 504)."""

    def __init__(self, status_code: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_code = code
        self.message = message
        self.headers = headers or {}

    def as_record(self) -> dict[str, Any]:
        """This refusal as plain data, for a cache: site mode shares a failed mint with its waiters."""
        return {"status": self.status_code, "code": self.error_code, "message": self.message, "headers": self.headers}

    @classmethod
    def from_record(cls, record: object) -> RouteError | None:
        """The refusal `as_record` wrote (raised once already, so its row is in the table); None
        for anything else found there (another release's record, a stranger's write)."""
        if not isinstance(record, dict):
            return None
        status, code, message, headers = (record.get(field) for field in ("status", "code", "message", "headers"))
        if not (isinstance(status, int) and isinstance(code, str) and isinstance(message, str)):
            return None
        if not (isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())):
            return None
        return cls(status, code, message, headers)

    def as_response(self) -> HttpResponse:
        """The row's answer, never stored by a cache."""
        return no_store(
            JsonResponse(
                {"error": self.error_code, "message": self.message}, status=self.status_code, headers=self.headers
            )
        )


def no_store(response: HttpResponse) -> HttpResponse:
    """A token, or a refusal about one, must never be served from a cache."""
    response["Cache-Control"] = "no-store"
    response["Pragma"] = "no-cache"
    return response


def for_caller(detail: str, generic: str) -> str:
    """`detail` (which may name settings) while DEBUG is on, to help the developer; `generic` in production."""
    return detail if settings.DEBUG else generic


def authentication_unavailable(detail: str | None = None) -> RouteError:
    """503 `authentication_unavailable`: who is calling cannot be known right now (a class failed, or
    the database or session store it reads is unreachable). Retry later; never stored by a cache."""
    generic = "Authentication is unavailable right now, so no token can be given. Retry shortly."
    return RouteError(
        503,
        "authentication_unavailable",
        for_caller(detail, generic) if detail else generic,
        {"Retry-After": str(AUTHENTICATION_RETRY_AFTER)},
    )


def misconfigured(error: ImproperlyConfigured) -> RouteError:
    """A site whose settings cannot mint: a clear answer (never a 500), logged with the check's id;
    `manage.py check` says the same. Only with DEBUG on does the answer name the setting."""
    problem = error.problem if isinstance(error, SettingsError) else None
    logger.error("Cannot mint (%s): %s", problem.id if problem else "ImproperlyConfigured", error)
    if problem is not None and problem.id == AUTHENTICATION_APPS_ID:
        return authentication_unavailable(str(error))
    if problem is not None and problem.setting.startswith("SPORTS_API_KEY"):
        generic = "This site's credentials for the sports service are not usable."
        return RouteError(502, "upstream_unauthorized", for_caller(str(error), generic))
    return RouteError(502, "upstream_error", for_caller(str(error), "This site is not set up to get sports tokens."))
