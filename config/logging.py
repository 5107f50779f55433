"""The site's log lines: one JSON object per line for log pipelines in production (DJANGO_LOG_FORMAT=json),
and one line per request (the access line of mintroute.middleware.follow_requests)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime

_STANDARD_FIELDS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """time, level, logger and message, plus any `extra=` fields (the request's `request_id`, the access
    line's fields) and the formatted exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({key: value for key, value in vars(record).items() if key not in _STANDARD_FIELDS})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class WithoutServerRequestLines(logging.Filter):
    """Drops the line per HTTP request that runserver (daphne's) writes: the access line says it, with the
    request's id. Its other lines (WebSocket connections, its start) pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        details = record.args
        return not (isinstance(details, Mapping) and "method" in details and "status" in details)
