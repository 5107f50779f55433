"""`manage.py runserver` as daphne's: HTTP and the WebSocket (ASGI) on one address, for development.

Daphne's own app (`"daphne"` in INSTALLED_APPS) imports its server and installs Twisted's reactor in every
process that loads the settings: each gunicorn worker, each `manage.py` command and test process paid
about 0.4 s of CPU for a server only `runserver` uses. This app is daphne's by name, so its `runserver`
command is found as before (first in INSTALLED_APPS, ahead of staticfiles'), and the server is imported
when that command runs, not before.
"""

from __future__ import annotations

from django.apps import AppConfig


class DaphneRunserver(AppConfig):
    name = "daphne"
    label = "daphne"
    verbose_name = "Daphne (runserver)"
