"""Settings of the standalone sandbox: the service's app alone, on a SQLite file in its data folder.

Nothing of any project: no admin, no sessions, no users. Match events travel through an
in-memory channel layer and the quota through an in-memory cache, as one process needs.
"""

from __future__ import annotations

import os
import secrets

from sportsproxy.sandbox.standalone import CONTROL_SECRET_VARIABLE, data

# The server signs no sessions or cookies with it; Django requires one all the same.
SECRET_KEY = secrets.token_urlsafe(50)
DEBUG = False  # answers never carry a traceback
# A test double on a port of its own: it answers whatever name the test process uses for it.
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"

INSTALLED_APPS = ["sportsproxy.sandbox"]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "sportsproxy.sandbox.standalone.urls"
ASGI_APPLICATION = "sportsproxy.sandbox.standalone.asgi.application"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": data.database_path(),
        "OPTIONS": {"timeout": 20},  # the control endpoints and the service write from different threads
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

SPORTS_SANDBOX_SIGNING_KEY = data.signing_key()
SPORTS_SANDBOX_EVENTS = True  # subscribers receive simulated match events

# The control endpoints (control.py) exist only when the starting process sets this secret.
SPORTS_SANDBOX_CONTROL_SECRET = os.environ.get(CONTROL_SECRET_VARIABLE, "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"text": {"format": "{asctime} {levelname} {name}: {message}", "style": "{"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "text"}},  # stdout is the ready line's
    "root": {"handlers": ["stderr"], "level": "INFO"},
}
