"""The project's settings, plus HTTP Basic at the mint route beside the session (a documented, tested
configuration), so tests/production/test_proxy.py can try passwords at the route of `make serve`."""

from config.settings import *  # noqa: F403 - the site as configured, one setting more

SPORTS_TOKEN_AUTHENTICATION = [
    "mintroute.authentication.SessionAuthentication",
    "rest_framework.authentication.BasicAuthentication",
]
# The tests check many passwords: a fast hasher keeps each check from taking a second of a busy machine.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
