"""The project's settings, plus a token-header authentication beside the session (tests/mintroute/device_auth.py),
so the processes of tests/production/test_site_mode.py can be called by many users without logging each in."""

from config.settings import *  # noqa: F403 - the site as configured, one setting more

SPORTS_TOKEN_AUTHENTICATION = [
    "mintroute.authentication.SessionAuthentication",
    "tests.mintroute.device_auth.DeviceAuthentication",
]
