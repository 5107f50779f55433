"""The HTTP endpoint itself: CORS, methods, cookies, and errors that stay inside the envelope."""

from __future__ import annotations

import json
import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sportsproxy.sandbox.rpc import methods
from tests.support import envelope, error_code, post_rpc


def test_cors_preflight_is_answered_for_any_origin_without_credentials() -> None:
    response = Client().options(
        "/sdk/v1/rpc",
        HTTP_ORIGIN="https://app.example.com",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert "Authorization" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response


def test_responses_carry_the_cors_origin_header(api_key: str) -> None:
    response = Client().post(
        "/sdk/v1/rpc", envelope("matches.list"), "application/json", HTTP_AUTHORIZATION=f"Bearer {api_key}"
    )
    assert response["Access-Control-Allow-Origin"] == "*"


def test_get_is_refused_with_405_and_allow() -> None:
    response = Client().get("/sdk/v1/rpc")
    assert response.status_code == 405
    assert response["Allow"] == "POST, OPTIONS"
    assert response.json()["error"]["code"] == "invalid_request"


def test_no_csrf_token_is_needed(api_key: str) -> None:
    response = Client(enforce_csrf_checks=True).post(
        "/sdk/v1/rpc", envelope("matches.list"), "application/json", HTTP_AUTHORIZATION=f"Bearer {api_key}"
    )
    assert response.status_code == 200
    assert "result" in response.json()


def test_a_logged_in_session_cookie_does_not_authenticate() -> None:
    client = Client()
    client.force_login(User.objects.create_user("someone"))
    response = client.post("/sdk/v1/rpc", envelope("matches.list"), "application/json")
    assert response.json()["error"]["code"] == "unauthorized"


def test_an_unexpected_failure_is_internal_error_without_a_traceback(
    api_key: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: object) -> dict[str, object]:
        raise RuntimeError("boom: secret detail")

    monkeypatch.setitem(methods.METHODS, "matches.list", methods.Method(explode))
    with caplog.at_level(logging.ERROR):
        answer = post_rpc(json.dumps(envelope("matches.list", {}, request_id="r1")), api_key)
    assert error_code(answer) == "internal_error"
    assert answer["id"] == "r1"
    assert "boom" not in answer["error"]["message"]
    assert "Traceback" not in json.dumps(answer)
    assert "boom: secret detail" in caplog.text  # the server log keeps the detail


def test_the_content_type_is_not_required_to_read_the_envelope(api_key: str) -> None:
    response = Client().post(
        "/sdk/v1/rpc", json.dumps(envelope("auth")), "text/plain", HTTP_AUTHORIZATION=f"Bearer {api_key}"
    )
    assert response.json()["result"]["ok"] is True


@pytest.mark.parametrize("method", ["keys.create", "keys.revoke", "apiKeys.create", "accounts.update"])
def test_keys_cannot_be_created_or_revoked_through_the_api(api_key: str, method: str) -> None:
    answer = post_rpc(json.dumps(envelope(method, {})), api_key)
    assert error_code(answer) == "method_not_found"
