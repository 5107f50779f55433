"""mintroute.errors: a refusal kept as plain data (site mode shares a failed mint) comes back whole,
and anything else found in its place is no refusal at all (never a 500 for the waiter that reads it)."""

from __future__ import annotations

import pytest

from mintroute.errors import RouteError


def test_a_refusal_comes_back_from_its_record_whole() -> None:
    refusal = RouteError(503, "upstream_unavailable", "Retry shortly.", {"Retry-After": "5"})
    back = RouteError.from_record(refusal.as_record())
    assert back is not None
    assert (back.status_code, back.error_code, back.message, back.headers) == (
        503,
        "upstream_unavailable",
        "Retry shortly.",
        {"Retry-After": "5"},
    )


@pytest.mark.parametrize(
    "record",
    [
        None,
        "upstream_error",
        {"status": 502},
        {"status": "502", "code": "upstream_error", "message": "m", "headers": {}},
        {"status": 502, "code": "upstream_error", "message": "m"},
        {"status": 502, "code": "upstream_error", "message": "m", "headers": {"Retry-After": 5}},
    ],
)
def test_anything_else_is_no_refusal(record: object) -> None:
    assert RouteError.from_record(record) is None
