"""The request body: optional JSON `{"reason": ...}`, small, and an object or nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from mintroute.errors import RouteError

REASONS = ("initial", "refresh", "reconnect", "unauthorized")
MAX_BODY_BYTES = 1024


class TokenRequestParser(JSONParser):
    """JSON, read no further than MAX_BODY_BYTES (DRF's own parser reads any size)."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        raw = stream.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            raise ParseError(f"The body is larger than {MAX_BODY_BYTES} bytes.")
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise ParseError("The body is not valid JSON.") from None


def reason_of(data: Any) -> str | None:
    """The optional `reason` member; 400 `bad_request` unless the body is a JSON object."""
    if not isinstance(data, dict):
        raise RouteError(400, "bad_request", 'The body must be a JSON object such as {"reason": "refresh"}.')
    reason = data.get("reason")
    if reason is not None and reason not in REASONS:
        raise RouteError(400, "bad_request", f"reason must be one of: {', '.join(REASONS)}.")
    return reason
