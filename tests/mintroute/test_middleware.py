"""mintroute.middleware: under ASGI, run_chain_in_one_thread runs the site's middleware in the request's thread."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient, Client


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every function Django's ASGI path sends from the event loop to a thread, by name."""
    sent: list[str] = []
    cross = SyncToAsync.__call__

    async def counted(self: SyncToAsync[Any, Any], *args: Any, **kwargs: Any) -> Any:
        sent.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await cross(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    return sent


@pytest.mark.django_db
async def test_under_asgi_no_middleware_step_crosses_to_a_thread_of_its_own(crossings: list[str]) -> None:
    response = await AsyncClient().get("/healthz")

    assert response.status_code == 200
    steps = [name for name in crossings if "Middleware." in name]
    assert steps == [name for name in steps if name.endswith(".process_view")]  # Django adapts these apart
    assert len(crossings) <= 6, crossings  # the chain, the view's URL and view steps, the signals, close


@pytest.mark.django_db
def test_under_wsgi_it_passes_every_request_on() -> None:
    response = Client().get("/healthz")

    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"  # the middleware above it ran
