"""Each request's id (mintroute.request_ids, set by mintroute.middleware.follow_requests): a trusted proxy's
valid `X-Request-ID`, else a new one, answered in `X-Request-ID` on every path."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from mintroute import request_ids

PROXY = "127.0.0.1"  # in the default SPORTS_TRUSTED_PROXIES
STRANGER = "203.0.113.9"
NEW = "new-id"
RANDOM = request_ids.new_request_id


@pytest.fixture(autouse=True)
def pinned_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_ids, "new_request_id", lambda: NEW)


@pytest.fixture
def behind_a_proxy(settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1


def answered_id(peer: str, sent: str | None, path: str = "/healthz") -> str:
    headers = {} if sent is None else {"X-Request-ID": sent}
    answer = Client(REMOTE_ADDR=peer).get(path, headers=headers)
    request_id: str = answer.headers["X-Request-ID"]
    return request_id


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize("sent", ["0f0e5f5e-8a4c-4e2b-9a57-5b1d1d0c7a11", "a" * 128, "Root=1-6789-abc"])
def test_a_trusted_proxys_id_is_the_requests(sent: str) -> None:
    assert answered_id(PROXY, sent) == sent


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize(
    "sent",
    ["", "a" * 129, "two words", "id\tINFO forged", "id\x00", "café", "a;b", "<script>"],
    ids=["empty", "too-long", "space", "tab", "nul", "non-ascii", "semicolon", "markup"],
)
def test_a_malformed_id_is_replaced_by_a_new_one(sent: str) -> None:
    assert answered_id(PROXY, sent) == NEW


@pytest.mark.usefixtures("behind_a_proxy")
def test_a_client_that_is_not_a_trusted_proxy_cannot_choose_its_id() -> None:
    assert answered_id(STRANGER, "chosen-by-the-client") == NEW


def test_with_no_proxy_in_front_no_peer_is_believed() -> None:
    assert answered_id(PROXY, "chosen-by-the-client") == NEW  # SPORTS_TRUSTED_PROXY_COUNT 0: clients face Django


@pytest.mark.usefixtures("behind_a_proxy")
def test_without_a_header_the_request_gets_a_new_id() -> None:
    assert answered_id(PROXY, None) == NEW


def test_a_wrong_proxy_setting_costs_no_answer(settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = "two"  # mintroute.E004's to report
    assert answered_id(PROXY, "chosen") == NEW


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize("path", ["/api/sports-token", "/accounts/login/", "/no-such-page", "/readyz"])
def test_every_path_answers_its_id(path: str) -> None:
    assert answered_id(PROXY, "the-proxys-id", path) == "the-proxys-id"


def test_each_request_gets_its_own_new_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_ids, "new_request_id", RANDOM)
    first, second = answered_id(STRANGER, None), answered_id(STRANGER, None)
    assert first != second
    assert len(first) == 32
    assert int(first, 16) >= 0  # hexadecimal, as nginx's $request_id
