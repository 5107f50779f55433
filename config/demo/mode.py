"""Whether this process is the demo: debug on and the sandbox mounted. Production never is."""

from __future__ import annotations

from django.conf import settings

DEMO_USERNAME = "demo"
DEFAULT_DEMO_PASSWORD = "demo-pass-123"  # noqa: S105 - published on purpose, for the demo only (debug on)


def is_demo() -> bool:
    """True only where the demo's conveniences (the login hint, the debug helpers) may show."""
    return bool(settings.DEBUG and settings.SPORTS_SANDBOX)
