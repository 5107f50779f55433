"""`make demo`'s own commands (the Makefile's, as `make -n demo` lists them), run on a fresh database and
`.env` of the test's own, with a short-lived runserver: each warning and each request's log line once."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx2

from tests.production.cluster import free_port

PROJECT_ROOT = Path(__file__).resolve().parents[3]
START_SECONDS = 60
CHECK_ID = re.compile(r"\(([a-z_]+\.[WE]\d{3})\)")
TEST_RUN_SETTINGS = ("DJANGO_", "SPORTS_", "DATABASE_URL", "REDIS_URL", "HOST")


def demo_commands(host: str) -> list[list[str]]:
    """The commands `make demo HOST=host` runs after its install step, with this interpreter for the venv's."""
    listed = subprocess.run(  # noqa: S603 - make, the project's Makefile
        ["make", "-n", "-o", "install", "demo", f"HOST={host}", f"PY={sys.executable}"],  # noqa: S607
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return [shlex.split(line) for line in listed.splitlines() if "manage.py" in line]


def test_make_demo_says_each_warning_and_each_requests_log_line_once(tmp_path: Path) -> None:
    host = f"127.0.0.1:{free_port()}"
    environment = {name: value for name, value in os.environ.items() if not name.startswith(TEST_RUN_SETTINGS)}
    environment |= {"DJANGO_ENV_FILE": str(tmp_path / ".env"), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    *setup, serve = demo_commands(host)
    assert [command[2] for command in setup] == ["migrate", "demo_setup"]
    assert serve[2:] == ["runserver", host]
    output = ""
    for command in setup:
        completed = subprocess.run(  # noqa: S603 - the Makefile's command
            command, cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr
        output += completed.stdout + completed.stderr
    log = tmp_path / "runserver.log"
    with log.open("w") as written:
        server = subprocess.Popen(  # noqa: S603 - the Makefile's command
            serve, cwd=PROJECT_ROOT, env=environment, stdout=written, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert server.poll() is None, log.read_text()
            try:
                httpx2.get(f"http://{host}/healthz", timeout=5)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        httpx2.get(f"http://{host}/accounts/login/", timeout=5)
        time.sleep(0.5)  # the server writes its log line after the answer; nothing to wait on but the file
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    output += log.read_text()

    checks = Counter(CHECK_ID.findall(output))
    assert [check for check, count in checks.items() if count > 1] == [], output
    assert "sportsproxy.W001" not in checks, output  # demo_setup writes the key before runserver checks
    for request in ("GET /healthz 200", "GET /accounts/login/ 200"):
        assert len([line for line in output.splitlines() if request in line]) == 1, output
    assert output.count("Watching for file changes") == 1, output
