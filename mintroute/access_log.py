"""One access line per request, through the logger `mintroute.access`, and the request being followed.

`following(request)` is what `mintroute.middleware.follow_requests` wraps each request in: the
request's id (mintroute.request_ids) is kept on the request (`request.request_id`) and set for the
SDK's calls and for every log line (sportsproxy.request_id), and the route's outcome, when the
route answers, is noted for the access line (`note_outcome`, called where the route counts it).

The line's fields, each its own key in the JSON log format and `key=value` in the text format:
`method`, `path` (percent-encoded, without the query string, which may carry a token), `status`,
`outcome` (the route's: `minted`, `reused`, `shared`, `ridden_through` or its row's `error`; `-` for
any other answer), `duration_ms` (until the answer's headers, not its streamed body), `user_id` (the
user the request was served as, when its handling looked at who it was; the line never loads a
session itself), `client_address` (the client's address as the route's limits read it: the forwarded
one from a trusted proxy), and the record's `request_id`. Never a header, a cookie or a body.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponseBase
from django.utils.encoding import escape_uri_path
from django.utils.functional import LazyObject, empty

from mintroute.ratelimits import client_address
from mintroute.request_ids import request_id_for
from sportsproxy.django.problems import SettingsError
from sportsproxy.request_id import NO_REQUEST, REQUEST_ATTRIBUTE, REQUEST_ID_HEADER, use_request_id

logger = logging.getLogger("mintroute.access")

timer: Callable[[], float] = time.perf_counter  # the clock of `duration_ms`; tests pin it

_METHOD = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,32}")  # an HTTP token, as servers accept them


@dataclass
class Followed:
    """A request being served: its id, when it began, and the route's outcome once it has one."""

    request_id: str
    started: float
    outcome: str | None = None


_followed: ContextVar[Followed | None] = ContextVar("mintroute_followed", default=None)


@contextmanager
def following(request: HttpRequest) -> Iterator[Followed]:
    """Follow `request` for the block: its id on it, on the SDK's calls and on every log line."""
    followed = Followed(request_id_for(request), timer())
    setattr(request, REQUEST_ATTRIBUTE, followed.request_id)
    token = _followed.set(followed)
    try:
        with use_request_id(followed.request_id):
            yield followed
    finally:
        _followed.reset(token)


def note_outcome(outcome: str) -> None:
    """The route's outcome of the request being served, for its access line."""
    followed = _followed.get()
    if followed is not None:
        followed.outcome = outcome


def answered(request: HttpRequest, response: HttpResponseBase, followed: Followed) -> HttpResponseBase:
    """`response` with the request's `X-Request-ID`, once its access line is written."""
    response[REQUEST_ID_HEADER] = followed.request_id
    fields = {
        "method": _method(request),
        "path": escape_uri_path(request.path),
        "status": response.status_code,
        "outcome": followed.outcome or NO_REQUEST,
        "duration_ms": round((timer() - followed.started) * 1000, 1),
        "user_id": _user_id(request),
        "client_address": _client_address(request),
    }
    logger.info(
        "%(method)s %(path)s %(status)s outcome=%(outcome)s duration_ms=%(duration_ms)s "
        "user_id=%(user_id)s client_address=%(client_address)s",
        fields,
        extra=fields,
    )
    return response


def _method(request: HttpRequest) -> str:
    method = request.method or ""
    return method if _METHOD.fullmatch(method) else NO_REQUEST


def _user_id(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    if isinstance(user, LazyObject) and getattr(user, "_wrapped", None) is empty:  # unread: reading loads the session
        return NO_REQUEST
    primary_key = getattr(user, "pk", None)
    return NO_REQUEST if primary_key is None else str(primary_key)


def _client_address(request: HttpRequest) -> str:
    try:
        address = client_address(request)
    except SettingsError:  # a wrong proxy setting: the checks say so, the line says nothing wrong
        return NO_REQUEST
    return NO_REQUEST if address is None else str(address)
