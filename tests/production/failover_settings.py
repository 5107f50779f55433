"""The project's settings for tests/production/test_failover.py: the sandbox's match events (and its timers'
ticks) every quarter second rather than every 3 s, so that the drill sees within a quarter second when the
channel layer delivers again; and
a fast password hasher, so that its users logging in again and again leave the machine's cores to the servers
whose failover it times (test speed only, as tests/conftest.py does for the other tests)."""

from config.settings import *  # noqa: F403 - the site as configured, two settings more

SPORTS_SANDBOX_EVENT_INTERVAL = 0.25
SPORTS_SANDBOX_WS_TICK = 0.25
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
