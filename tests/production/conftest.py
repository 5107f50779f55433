from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.production.cluster import PING_AFTER_SECONDS, Cluster, drop_prepared, require_engines


@pytest.fixture(scope="session", autouse=True)
def _prepared_configurations() -> Iterator[None]:
    """The template databases and static folders the clusters of this test process were made from go with it."""
    yield
    drop_prepared()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    require_engines()
    # A short drain, for the rolling restart (tests/production/test_two_processes.py).
    running = Cluster(SPORTS_SANDBOX_WS_PING_AFTER=str(PING_AFTER_SECONDS), WEB_DRAIN_SECONDS="1.5")
    try:
        running.start()
        yield running
    finally:
        running.stop()
