"""Property-based fuzzing of POST /api/sports-token: every answer is one of its table's rows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.strategies import json_values
from tests.mintroute.conftest import logged_in_browser

ROWS = {
    200: None,
    400: "bad_request",
    401: "not_authenticated",
    403: {"csrf_failed", "forbidden"},
    405: "method_not_allowed",
    429: "rate_limited",
    502: {"upstream_unauthorized", "upstream_error"},
    503: {"upstream_unavailable", "rate_limit_unavailable", "authentication_unavailable"},
    504: "upstream_timeout",
}
FUZZ = settings(
    max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.fixture
def browser(settings: Any, api_key: str) -> Client:
    settings.SPORTS_API_KEY = api_key
    settings.SPORTS_TOKEN_RATE = "1000000/m"
    return logged_in_browser()


@FUZZ
@given(
    body=st.one_of(json_values.map(json.dumps), st.binary(max_size=300), st.text(max_size=300)),
    content_type=st.sampled_from(
        ["application/json", "text/plain", "application/x-www-form-urlencoded", "application/octet-stream"]
    ),
    method=st.sampled_from(["POST", "POST", "POST", "PUT", "GET", "DELETE", "PATCH"]),
    with_csrf=st.booleans(),
)
def test_every_answer_is_a_row_of_the_table(
    browser: Client, body: Any, content_type: str, method: str, with_csrf: bool
) -> None:
    headers = {"HTTP_X_CSRFTOKEN": browser.cookies["csrftoken"].value} if with_csrf else {}
    raw = body.encode() if isinstance(body, str) else body
    response = browser.generic(method, "/api/sports-token", raw, content_type=content_type, **headers)
    assert response.status_code in ROWS
    payload = response.json()
    assert response["Cache-Control"] == "no-store"
    expected = ROWS[response.status_code]
    if expected is None:
        assert set(payload) == {"token", "expiresAt"}
    else:
        assert payload["error"] in ({expected} if isinstance(expected, str) else expected)
        assert "Traceback" not in payload["message"]
