"""config/runserver.py: `runserver` is daphne's (HTTP and the WebSocket), and only `runserver` loads daphne's server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# In a process of its own: this test process may have loaded daphne already, through another test.
PROBE = """
import json, sys
import django
django.setup()
from django.core.management import get_commands, load_command_class
loaded_by_setup = sorted(name for name in ("daphne.server", "twisted.internet.reactor") if name in sys.modules)
command = load_command_class(get_commands()["runserver"], "runserver")
print(json.dumps({
    "loaded_by_setup": loaded_by_setup,
    "runserver": type(command).__module__,
    "server_after_command": "daphne.server" in sys.modules,
}))
"""


def test_only_runserver_loads_daphnes_server() -> None:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_ENV_FILE": ""}
    environment["DJANGO_DEBUG"] = "1"
    probe = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=60
    )
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen == {
        "loaded_by_setup": [],
        "runserver": "daphne.management.commands.runserver",
        "server_after_command": True,
    }
