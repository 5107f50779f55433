"""docs/settings.md is the one settings reference: every setting the code reads is listed there,
and every setting listed there is read by the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["config", "mintroute", "sportsproxy"]
SERVING = "HOST|WEB_CONCURRENCY|WEB_THREADS|WEB_DRAIN_SECONDS|FORWARDED_ALLOW_IPS"  # make serve's (docs/settings.md)
# The site's own apps (config/<app>/) prefix their settings with their name.
SITE_APPS = "|".join(apps.parent.name.upper() for apps in sorted((ROOT / "config").glob("*/apps.py")))
OURS = re.compile(rf"^((SPORTS|DJANGO|DATABASE|REDIS|TEST|DEV|{SITE_APPS})_[A-Z_]+|{SERVING})$")
READS = re.compile(
    r"""getattr\(settings,\s*"([A-Z_]+)"     # a Django setting with a default
      | settings\.([A-Z][A-Z_]+)              # a Django setting
      | env\.\w+\(\s*"([A-Z_]+)"               # an environment variable, through django-environ
      | os\.environ(?:\.get\(|\[)\s*"([A-Z_]+)" # an environment variable, directly
      | environment(?:\.get\(|\[)\s*"([A-Z_]+)" # one of config/serve.py's environment
      | ^[A-Z_]+\s*=\s*"(DEV_[A-Z_]+)"         # config/dev.py names its variables once, as constants
    """,
    re.VERBOSE | re.MULTILINE,
)


def settings_read_by_the_code() -> set[str]:
    # tests/stores.py: where the tests keep their data (TEST_DATABASE_URL, TEST_REDIS_URL), documented alike.
    files = [
        ROOT / "manage.py",
        ROOT / "tests" / "stores.py",
        *(path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))),
    ]
    names = {name for path in files for match in READS.finditer(path.read_text()) for name in match.groups() if name}
    return {name for name in names if OURS.match(name)}


def settings_documented() -> set[str]:
    # docs/settings.md, and the page of a part that a project may not have (an app of the site) for its own.
    pages = sorted((ROOT / "docs").glob("*.md"))
    return {row for page in pages for row in re.findall(r"^\| `([A-Z_]+)` \|", page.read_text(), flags=re.MULTILINE)}


def test_every_setting_the_code_reads_is_documented() -> None:
    read = settings_read_by_the_code()
    assert {"SPORTS_API_KEY", "SPORTS_TRANSPORT", "DJANGO_DEBUG", "DJANGO_SECRET_KEY"} <= read  # the scan works
    assert read - settings_documented() == set()


def test_every_documented_setting_is_read_by_the_code() -> None:
    assert settings_documented() - settings_read_by_the_code() == set()
