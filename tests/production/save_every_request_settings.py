"""The project's settings, saving the session at every request (SESSION_SAVE_EVERY_REQUEST), as a site
that slides its sessions' expiry does: tests/production/test_database_outage.py cuts the database
between the mint and that save."""

from config.settings import *  # noqa: F403 - the site as configured, one setting more

SESSION_SAVE_EVERY_REQUEST = True
