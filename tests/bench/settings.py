"""Benchmark settings: the project's own, plus two baseline views and room for the load."""

from config.settings import *  # noqa: F403 - the benchmark measures the project as configured

ROOT_URLCONF = "tests.bench.urls"
SPORTS_TOKEN_RATE = "1000000/m"  # the benchmark measures the route's cost, not its limit
SPORTS_SANDBOX_RATE_CLASSES = {
    "business": {"requests_per_minute": 10**9, "connections": 5000, "subscriptions": 5000},
}
