from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.production.cluster import Cluster, engines_available


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    missing = engines_available()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)  # .ci/run starts both engines: never skip these tests there
        pytest.skip(missing)
    running = Cluster()
    try:
        running.start()
        yield running
    finally:
        running.stop()
