"""matches.list on the real endpoint: every sport, filters, environments, cursor pagination."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from sportsproxy.sandbox.matches.book import SPORTS, book
from tests.conftest import RpcCall

MATCH_FIELDS = {"id", "sport", "env", "competition", "home", "away", "startsAt", "status", "score", "updatedAt"}


def all_pages(rpc: RpcCall, credential: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):  # bounded: far more pages than the data has
        page = rpc("matches.list", {**params, **({"cursor": cursor} if cursor else {})}, credential=credential)
        result = page["result"]
        records.extend(result["data"])
        cursor = result["pagination"]["nextCursor"]
        if cursor is None:
            return records
    raise AssertionError("pagination never ended")


@pytest.mark.parametrize("sport", SPORTS)
def test_every_sport_has_matches(rpc: RpcCall, api_key: str, sport: str) -> None:
    result = rpc("matches.list", {"sports": [sport], "limit": 100}, credential=api_key)["result"]
    assert result["data"]
    assert {match["sport"] for match in result["data"]} == {sport}


def test_a_match_has_the_contract_fields(rpc: RpcCall, api_key: str) -> None:
    for match in rpc("matches.list", {"limit": 100}, credential=api_key)["result"]["data"]:
        assert set(match) == MATCH_FIELDS
        assert match["status"] in {"scheduled", "live", "finished"}
        assert set(match["score"]) == {"home", "away"}
        for field in ("startsAt", "updatedAt"):
            assert datetime.fromisoformat(match[field]).utcoffset() is not None


def test_each_sport_has_live_finished_and_scheduled_matches() -> None:
    for sport in SPORTS:
        assert {match.status for match in book("live") if match.sport == sport} == {"scheduled", "live", "finished"}


@pytest.mark.parametrize("limit", [1, 7, 20, 100])
def test_pagination_visits_each_record_exactly_once(rpc: RpcCall, api_key: str, limit: int) -> None:
    records = all_pages(rpc, api_key, {"limit": limit})
    ids = [record["id"] for record in records]
    assert len(ids) == len(set(ids)) == len(book("test"))
    first = rpc("matches.list", {"limit": limit}, credential=api_key)["result"]["pagination"]
    assert first["total"] == len(ids)
    assert first["limit"] == limit


def test_pagination_with_a_sports_filter_visits_exactly_the_filtered_records(rpc: RpcCall, api_key: str) -> None:
    records = all_pages(rpc, api_key, {"sports": ["tennis", "esports"], "limit": 5})
    expected = {match.id for match in book("test") if match.sport in {"tennis", "esports"}}
    assert len(records) == len(expected)
    assert {record["id"] for record in records} == expected


def test_an_empty_sports_list_selects_nothing(rpc: RpcCall, api_key: str) -> None:
    result = rpc("matches.list", {"sports": []}, credential=api_key)["result"]
    assert result == {"data": [], "pagination": {"limit": 20, "total": 0, "nextCursor": None}}


def test_live_and_test_keys_see_separate_data(rpc: RpcCall, api_key: str, live_api_key: str) -> None:
    test_records = all_pages(rpc, api_key, {"limit": 100})
    live_records = all_pages(rpc, live_api_key, {"limit": 100})
    assert {record["env"] for record in test_records} == {"test"}
    assert {record["env"] for record in live_records} == {"live"}
    assert not {record["id"] for record in test_records} & {record["id"] for record in live_records}


def test_the_data_is_deterministic() -> None:
    from sportsproxy.sandbox.matches.book import _generate

    anchor = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
    assert [m.as_json() for m in _generate("live", anchor)] == [m.as_json() for m in _generate("live", anchor)]
