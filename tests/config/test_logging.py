"""The site's log lines as production writes them (config/logging.py, config/settings.py's LOGGING): JSON, each
naming its request, the access line at its own level (DJANGO_ACCESS_LOG_LEVEL), in a process of its own; and
runserver's own request lines left to the access line."""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

from config.logging import WithoutServerRequestLines

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REQUESTS = (
    "from django.test import Client; "
    "Client(REMOTE_ADDR='127.0.0.1').get('/healthz', headers={'X-Request-ID': 'from-the-proxy'}); "
    "import logging; logging.getLogger('mintroute.readiness').warning('outside any request')"
)


def production_lines(static_root: Path, **environment: str) -> list[dict[str, object]]:
    """The JSON lines of a production process that serves one request, then logs a line outside any."""
    completed = subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-c", f"import django; django.setup(); {REQUESTS}"],
        cwd=PROJECT_ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "testserver",
            "SPORTS_SANDBOX": "0",
            "SPORTS_TRUSTED_PROXY_COUNT": "1",
            "DJANGO_STATIC_ROOT": str(static_root),  # WhiteNoise warns of a missing one
            **environment,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in completed.stderr.splitlines()]


def test_production_writes_json_lines_that_name_their_request_and_an_access_level_of_its_own(tmp_path: Path) -> None:
    lines = production_lines(tmp_path, DJANGO_LOG_LEVEL="WARNING", DJANGO_ACCESS_LOG_LEVEL="INFO")

    [access, outside] = lines
    assert {key: access[key] for key in ("logger", "request_id", "method", "path", "status", "outcome")} == {
        "logger": "mintroute.access",
        "request_id": "from-the-proxy",
        "method": "GET",
        "path": "/healthz",
        "status": 200,
        "outcome": "-",
    }
    assert {"duration_ms", "user_id", "client_address"} <= access.keys()
    assert (outside["message"], outside["request_id"]) == ("outside any request", "-")


def test_runservers_own_line_per_request_gives_way_to_the_access_line() -> None:
    def line(message: str, details: dict[str, object]) -> logging.LogRecord:  # as daphne's runserver logs
        return logging.LogRecord("django.channels.server", logging.INFO, __file__, 1, message, (details,), None)

    request = {"method": "GET", "path": "/", "status": 200, "time_taken": 0.01, "client": "127.0.0.1:5"}
    assert WithoutServerRequestLines().filter(line("HTTP %(method)s %(path)s %(status)s", request)) is False
    socket = {"path": "/sdk/v1/ws", "client": "127.0.0.1:5"}
    assert WithoutServerRequestLines().filter(line("WebSocket CONNECT %(path)s [%(client)s]", socket)) is True
