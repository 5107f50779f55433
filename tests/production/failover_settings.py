"""The project's settings, the sandbox's match events every half second rather than every 3 s, so that
tests/production/test_failover.py sees within half a second when the channel layer delivers again."""

from config.settings import *  # noqa: F403 - the site as configured, one setting more

SPORTS_SANDBOX_EVENT_INTERVAL = 0.5
