"""Benchmark settings: the project's own, plus two baseline views and room for the load."""

import os

from config.settings import *  # noqa: F403 - the benchmark measures the project as configured

ROOT_URLCONF = "tests.bench.urls"
# The benchmark measures the route's cost, not its limit; the soak sets a real limit.
SPORTS_TOKEN_RATE = os.environ.get("BENCH_TOKEN_RATE", "1000000/m")
SPORTS_SANDBOX_RATE_CLASSES = {
    "business": {"requests_per_minute": 10**9, "connections": 5000, "subscriptions": 5000},
}
