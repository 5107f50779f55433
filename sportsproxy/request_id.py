"""The request id the SDK sends with each call, as `X-Request-ID`, so that one request of a site can be
followed from its own log lines into the service's.

    from sportsproxy.request_id import use_request_id

    with use_request_id("3f2a9c0e5d41"):
        client.tokens.create(ttl=600)  # sent with X-Request-ID: 3f2a9c0e5d41

Outside such a block the SDK sends none. The id is held in a context variable: each thread and each
asyncio task has its own, so concurrent requests of one process never send each other's. A Django
site sets it for each request with the route's middleware `mintroute.middleware.follow_requests`.

`RequestIdFilter`, on a logging handler, writes the id on every record the handler formats, as
`request_id`: a format that names `%(request_id)s` (or a JSON formatter) shows which request caused
each line, the SDK's own included.

An id is 1 to 128 characters of letters, digits and `-_.:+=/@`: enough for a UUID, nginx's
`$request_id` or a cloud load balancer's trace id, and nothing that could end a header or a log line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ATTRIBUTE = "request_id"  # where a web framework's request object keeps its id (Django: mintroute)
NO_REQUEST = "-"  # the `request_id` of a line no request caused
MAX_REQUEST_ID_LENGTH = 128
_SHAPE = re.compile(rf"[A-Za-z0-9\-_.:+=/@]{{1,{MAX_REQUEST_ID_LENGTH}}}")

_current: ContextVar[str | None] = ContextVar("sportsproxy_request_id", default=None)


def is_valid_request_id(value: str) -> bool:
    """True when `value` may be sent and logged as it is: 1 to 128 safe characters (see above)."""
    return _SHAPE.fullmatch(value) is not None


def current_request_id() -> str | None:
    """The id this thread or task sends with its calls, or None outside `use_request_id`."""
    return _current.get()


@contextmanager
def use_request_id(request_id: str) -> Iterator[str]:
    """Send `request_id` with every call made inside the block (by this thread or task, and the tasks
    it starts); ValueError when it is not a valid id. The previous id is back after the block."""
    if not is_valid_request_id(request_id):
        raise ValueError(
            f"A request id is 1 to {MAX_REQUEST_ID_LENGTH} letters, digits or -_.:+=/@ characters; "
            "make a new one (uuid.uuid4().hex) for a value that is not."
        )
    token = _current.set(request_id)
    try:
        yield request_id
    finally:
        _current.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record: the id of the request this thread or task serves, else the id
    of the request the record names in its `request` attribute (Django's `django.request` lines, written
    after the request's middleware has finished), else `-`. Put it on a handler, so that every logger's
    lines pass it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get() or _id_of_its_request(record) or NO_REQUEST
        return True


def _id_of_its_request(record: logging.LogRecord) -> str | None:
    request_id = getattr(getattr(record, "request", None), REQUEST_ATTRIBUTE, None)
    return request_id if isinstance(request_id, str) else None
