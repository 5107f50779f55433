"""Benchmark settings: the project's own, plus two baseline views and room for the load."""

import os

from config.settings import *  # noqa: F403 - the benchmark measures the project as configured

ROOT_URLCONF = "tests.bench.urls"
# The benchmark measures the route's cost, not its limit; the soak sets a real limit.
SPORTS_TOKEN_RATE = os.environ.get("BENCH_TOKEN_RATE", "1000000/m")
SPORTS_SANDBOX_RATE_CLASSES = {
    "business": {"requests_per_minute": 10**9, "connections": 20_000, "subscriptions": 20_000},
}
# A football event about every second, so a fan-out window of 10 s holds about ten of them.
SPORTS_SANDBOX_EVENT_INTERVAL = float(os.environ.get("BENCH_EVENT_INTERVAL", "1"))
# The real-time rows compare channels_redis's layers side by side (tests/bench/realtime.py).
if os.environ.get("BENCH_CHANNEL_LAYER"):
    CHANNEL_LAYERS["default"]["BACKEND"] = os.environ["BENCH_CHANNEL_LAYER"]  # noqa: F405
    if CHANNEL_LAYERS["default"]["BACKEND"] == "channels_redis.core.RedisChannelLayer":  # noqa: F405
        # Each process reads one channel (sportsproxy/sandbox/realtime/fanout.py): room for 1,000
        # events there, not 100, before group_send drops any.
        CHANNEL_LAYERS["default"]["CONFIG"]["capacity"] = 1_000  # noqa: F405
