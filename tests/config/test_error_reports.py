"""Error reports of a failure mid-mint show neither the API key nor a token."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import RequestFactory
from django.views.debug import ExceptionReporter

from mintroute.errors import RouteError
from mintroute.minting import mint_upstream
from sportsproxy import SportsClient
from sportsproxy.sandbox.rpc.transport import SandboxTransport


def test_a_report_of_an_exception_raised_mid_mint_hides_key_and_token(
    settings: Any, api_key: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings.SPORTS_API_KEY = api_key
    with SportsClient(api_key, base_url="http://sandbox.invalid", transport=SandboxTransport()) as client:
        token = client.tokens.create().token

    def explode(self: SportsClient, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        credential = self._credential  # a local variable holding the key, as real code might have
        browser_token = token
        raise RuntimeError(f"upstream exploded while calling {method} ({len(credential) + len(browser_token)})")

    monkeypatch.setattr(SportsClient, "call", explode)
    request = RequestFactory().post(
        "/api/sports-token",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_COOKIE=f"sports_token={token}",
        HTTP_X_API_KEY=api_key,
    )
    with caplog.at_level(logging.ERROR, logger="mintroute.minting"), pytest.raises(RouteError):
        mint_upstream(600)  # answered 502 upstream_error; the failure is logged with its traceback
    (logged,) = [record for record in caplog.records if record.exc_info]
    assert logged.exc_info is not None
    report = ExceptionReporter(request, *logged.exc_info)  # what an error report of that log line shows
    html, text = report.get_traceback_html(), report.get_traceback_text()
    assert "upstream exploded" in text
    for secret in (api_key, api_key[8:], token):
        assert secret not in html
        assert secret not in text
