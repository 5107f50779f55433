from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.production.cluster import Cluster, require_engines


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    require_engines()
    running = Cluster()
    try:
        running.start()
        yield running
    finally:
        running.stop()
