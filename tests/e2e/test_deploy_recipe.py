"""docs/deploy.md's steps, run exactly in their order on a fresh checkout, a fresh database and a Redis of
the test's own, with the standalone sandbox (`python -m sportsproxy.sandbox serve`, on another port) as
the service at SPORTS_BASE_URL, and nginx, as the page configures it, on a port other than 80; then the
page in Chromium through nginx: the login, the mint, and the browser's calls and socket to the service
work on the first try.

Each step is the documented line with this machine's addresses in place of the documented ones (the
tests' PostgreSQL server (tests/stores.py) and a database's name, Redis, the service, its key, the ports).
Three steps cannot run here as a person runs them, and the test does what each says instead:
`createsuperuser` gets its answers from the environment (`--no-input`), the nginx step saves the
documented configuration and starts nginx on it in a folder of the test's own (no sudo, no systemd), and
`make serve` runs in the background until the test ends.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import psycopg
import pytest
from playwright.sync_api import Browser, expect

from sportsproxy.testing import SportsSandbox
from tests import stores
from tests.checkout import clean_checkout
from tests.production.cluster import free_port, require_engines
from tests.production.nginx import main_configuration, nginx_binary, site_configuration
from tests.redis_server import RedisServer

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STEPS = re.compile(r"<!-- deploy: steps -->\s*```sh\n(?P<code>.*?)```\s*<!-- /deploy: steps -->", re.DOTALL)
USERNAME, PASSWORD = "owner", "recipe-pass-123-owner"
STEP_TIMEOUT_SECONDS = 300  # `make install` on a fresh machine downloads every package
SERVE_START_SECONDS = 120  # make serve: its checks, migrate and collectstatic, then gunicorn
# The test run's own settings never reach the steps: a fresh machine has none of them.
RUN_SETTINGS = re.compile(r"^(DJANGO_|SPORTS_|DATABASE_URL$|REDIS_URL$|HOST$|WEB_|PYTHONPATH$|VIRTUAL_ENV$)")


def documented_value(name: str) -> str:
    """The value the recipe's `export NAME=...` line gives, e.g. its placeholder for the API key."""
    (line,) = [line for line in recipe() if line.startswith(f"export {name}=")]
    return shlex.split(line)[1].split("=", 1)[1]


def recipe() -> list[str]:
    """The documented steps in their order: each line that is not blank or only a comment."""
    (block,) = STEPS.findall((PROJECT_ROOT / "docs" / "deploy.md").read_text())
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def kind(step: str) -> str:
    words = shlex.split(step, comments=True)
    if words[0] == "export":
        return "export"
    if words[:2] == [".venv/bin/python", "manage.py"]:
        return f"manage.py {words[2]}"
    if words[0] == "sudo":
        return "nginx"
    return "make serve" if words[-2:] == ["make", "serve"] else words[0] if words[0] != "make" else shlex.join(words)


def test_the_recipe_lists_its_steps_in_an_order_that_works() -> None:
    kinds = [kind(step) for step in recipe()]
    exports = kinds.count("export")
    assert kinds == [
        "make install",
        "createdb",
        *["export"] * exports,
        "manage.py migrate",
        "manage.py createsuperuser",
        "manage.py check",
        "nginx",
        "make serve",
    ]
    exported = " ".join(step for step in recipe() if kind(step) == "export")
    assert "SPORTS_BASE_URL=" in exported
    assert "SPORTS_SANDBOX" not in exported  # the sandbox off because SPORTS_BASE_URL is set, and not installed


@dataclass
class Deployed:
    url: str  # nginx's address
    service: SportsSandbox


class Machine:
    """The steps' shell: the environment the `export`s build, run in the checkout."""

    def __init__(self, checkout: Path, substitutions: dict[str, str]) -> None:
        self.checkout = checkout
        self.substitutions = substitutions
        self.used: set[str] = set()
        self.environment = {name: value for name, value in os.environ.items() if not RUN_SETTINGS.match(name)}

    def line(self, step: str) -> str:
        for documented, ours in self.substitutions.items():
            if documented in step:
                self.used.add(documented)
                step = step.replace(documented, ours)
        return step

    def export(self, step: str) -> None:
        printed = self.run(f"{step}\nenv -0")
        self.environment = dict(entry.split("=", 1) for entry in printed.split("\0") if "=" in entry)

    def run(self, step: str, **extra: str) -> str:
        completed = subprocess.run(  # noqa: S603 - the documented step, in bash as a reader runs it
            ["bash", "-c", step],  # noqa: S607
            cwd=self.checkout,
            env={**self.environment, **extra},
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_SECONDS,
            check=False,
        )
        assert completed.returncode == 0, (
            f"{step!r} exited {completed.returncode}:\n{completed.stdout}{completed.stderr}"
        )
        return completed.stdout


@pytest.fixture(scope="module")
def deployed(sports_sandbox: SportsSandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    require_engines()
    nginx = nginx_binary()
    folder = tmp_path_factory.mktemp("deploy-recipe")
    database = f"sports_recipe_{os.getpid()}_{free_port()}"
    redis = RedisServer()
    redis.start()
    site_port, nginx_port = free_port(), free_port()
    assert nginx_port != 80
    machine = Machine(
        clean_checkout(folder),
        {
            # The tests' PostgreSQL server (tests/stores.py), reached as TEST_DATABASE_URL says.
            "createdb -h 127.0.0.1 -U postgres sports": shlex.join(
                ["createdb", f"--maintenance-db={stores.DATABASE_URL}", database]
            ),
            "postgres://postgres@127.0.0.1:5432/sports": shlex.quote(stores.postgres_url(database)),
            "redis://127.0.0.1:6379/0": redis.url,
            "https://api.sports.example": sports_sandbox.base_url,
            documented_value("SPORTS_API_KEY"): sports_sandbox.create_key("deploy-recipe"),
            "HOST=127.0.0.1:8000": f"HOST=127.0.0.1:{site_port}",
        },
    )
    processes: list[subprocess.Popen[bytes]] = []
    serve_log = folder / "make-serve.log"
    try:
        for documented in recipe():
            step = machine.line(documented)
            match kind(documented):
                case "export":
                    machine.export(step)
                case "manage.py createsuperuser":
                    answers = {"DJANGO_SUPERUSER_USERNAME": USERNAME, "DJANGO_SUPERUSER_PASSWORD": PASSWORD}
                    machine.run(f"{step.split('#', 1)[0]} --no-input --email owner@example.com", **answers)
                case "nginx":
                    configuration = site_configuration(
                        listen=nginx_port, http_address=f"127.0.0.1:{site_port}", socket_address="127.0.0.1:9"
                    )
                    (folder / "nginx").mkdir()
                    main = main_configuration(folder / "nginx", configuration)
                    machine.run(f"{nginx} -t -c {main}")
                    processes.append(subprocess.Popen([nginx, "-c", str(main)]))  # noqa: S603 - the nginx binary, our file
                case "make serve":
                    with serve_log.open("wb") as log:
                        processes.append(
                            subprocess.Popen(  # noqa: S603 - the documented step
                                ["bash", "-c", step],  # noqa: S607
                                cwd=machine.checkout,
                                env=machine.environment,
                                stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True,
                            )
                        )
                case _:
                    machine.run(step)
        assert machine.used == set(machine.substitutions), "docs/deploy.md no longer holds a documented value"
        url = f"http://127.0.0.1:{nginx_port}"
        wait_for_health(url, processes[-1], serve_log)
        yield Deployed(url=url, service=sports_sandbox)
    finally:
        for process in reversed(processes):
            stop(process)
        redis.stop()
        with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def wait_for_health(url: str, serving: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVE_START_SECONDS
    while True:
        assert serving.poll() is None, f"make serve exited {serving.returncode}:\n{log.read_text()[-4000:]}"
        try:
            if httpx2.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        assert time.monotonic() < deadline, (
            f"no /healthz through nginx within {SERVE_START_SECONDS} s:\n{log.read_text()[-4000:]}"
        )
        time.sleep(0.3)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process (for make serve, SIGINT to everything it started, as Ctrl-C: at once, without
    the drain a SIGTERM makes), bounded, then SIGKILL."""
    try:
        if os.getpgid(process.pid) == process.pid:  # make serve: a session of its own
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.terminate()
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def test_the_recipes_site_logs_in_mints_and_calls_the_service_from_the_browser_first_time(
    deployed: Deployed, browser: Browser, transactional_db: None
) -> None:  # transactional_db: this test's own database stays untouched, outside Playwright's loop
    service = deployed.service.base_url
    page = browser.new_page()
    failures: list[str] = []
    page.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    console_errors: list[str] = []
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    service_calls: list[str] = []
    page.on("request", lambda request: service_calls.append(request.url) if request.url.startswith(service) else None)
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    mints: list[str] = []
    page.on("request", lambda r: mints.append(r.post_data or "") if r.url.endswith("/api/sports-token") else None)

    page.goto(f"{deployed.url}/accounts/login/?next=/")  # `/` is the first page, whichever the project has
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert "CSRF verification failed" not in page.content()  # nginx gave Django the Host with its port
    page.wait_for_url(f"{deployed.url}/")

    expect(page.locator("#matches-rows tr").first).to_be_visible()  # the browser's call, with its token
    expect(page.locator("#connection-state")).to_have_attribute("data-state", "open")  # its socket, authenticated
    assert [json.loads(body)["reason"] for body in mints] == ["initial"]
    assert f"{service}/sdk/v1/rpc" in service_calls
    assert sockets == [service.replace("http://", "ws://") + "/sdk/v1/ws"]
    assert [failure for failure in failures if not failure.endswith("/favicon.ico")] == []
    assert [error for error in console_errors if "favicon" not in error] == []
    page.close()
