"""Projects generated from this repository as a copier template (copier.yml), outside it, and how to run them.

The template is a git clone of this checkout: copier renders committed files only, so these tests try the
last commit. Every generated project runs on one virtualenv made from the lock (uv, its cache), not this
checkout's, so that nothing of this checkout's code is importable from a generated project.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT = 180.0  # seconds: one command of a generated project (check, migrate, a test subset)
QUICK_LOOP_TIMEOUT = 600.0  # seconds: its `make check` (linters, tsc, the unit tests), beside the rest of the gate
SERVER_START_TIMEOUT = 30.0
OWNER, OWNER_PASSWORD = "owner", "owner-pass-8431"


def run(command: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = COMMAND_TIMEOUT) -> str:
    """Run `command` and return its output (stdout and stderr); fail with that output when it exits non-zero."""
    done = subprocess.run(  # noqa: S603 - fixed commands of the tests
        command,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode} in {cwd}:\n{output[-6000:]}"
    return output


def git(cwd: Path, *arguments: str) -> str:
    identity = ["-c", "user.name=Starter tests", "-c", "user.email=starter@example.com", "-c", "commit.gpgsign=false"]
    return run(["git", *identity, *arguments], cwd)


def clone_template(destination: Path) -> Path:
    """A clone of this checkout's last commit: the template as `copier copy <its git URL>` would see it."""
    # --no-local packs the objects: copier walks the template's .git too, and loose objects cost it a render each.
    run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(destination)], ROOT)
    return destination


def make_venv(folder: Path) -> Path:
    """One virtualenv with everything the lock's requirements-dev.txt names, hash-checked; returns its bin/."""
    uv = ROOT / ".venv" / "bin" / "uv"
    run([str(uv), "venv", "--quiet", "--python", str(ROOT / ".venv" / "bin" / "python"), str(folder)], ROOT)
    python = folder / "bin" / "python"
    install = [str(uv), "pip", "install", "--quiet", "--python", str(python), "--require-hashes", "--no-deps"]
    run([*install, "-r", str(ROOT / "requirements-dev.txt")], ROOT)
    return folder / "bin"


COPIER = str(ROOT / ".venv" / "bin" / "copier")


def copier_copy(template: Path, destination: Path, answers: Mapping[str, str]) -> Path:
    """`copier copy --defaults` with `answers`, then the project committed to a new git repository."""
    data = [part for name, value in answers.items() for part in ("--data", f"{name}={value}")]
    command = [COPIER, "copy", "--quiet", "--defaults", "--vcs-ref", "HEAD", *data, str(template), str(destination)]
    run(command, destination.parent)
    git(destination, "init", "--quiet", "--initial-branch", "main")
    git(destination, "add", "-A")
    git(destination, "commit", "--quiet", "-m", "Generated")
    return destination


# How this machine reaches the package registries (certificates, proxies, npm's and pip's own settings): a
# contributor's shell has them, and without them `npm ci` retries TLS for minutes before it reads its cache.
MACHINE_VARIABLES = re.compile(r"(?i)(.*_proxy|.*_ca_certs?|ssl_cert_.*|.*_ca_bundle|npm_config_.*|pip_.*|uv_.*)")


def environment(project: Path, venv_bin: Path, **settings: str) -> dict[str, str]:
    """A generated project's own environment: none of this test run's variables but how the machine reaches the
    registries, its own database, debug on."""
    base = {
        **{name: value for name, value in os.environ.items() if MACHINE_VARIABLES.fullmatch(name)},
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(project)),
        "LANG": "C.UTF-8",
        "DJANGO_ENV_FILE": "",
        "DJANGO_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{project / 'db.sqlite3'}",
    }
    return {**base, **settings}


def manage(project: Path, env: Mapping[str, str], *arguments: str) -> str:
    return run([str(Path(env["PATH"].split(os.pathsep)[0]) / "python"), "manage.py", *arguments], project, env)


def create_owner(project: Path, env: Mapping[str, str]) -> None:
    manage(
        project,
        {**env, "DJANGO_SUPERUSER_PASSWORD": OWNER_PASSWORD},
        "createsuperuser",
        "--no-input",
        "--username",
        OWNER,
        "--email",
        "owner@example.com",
    )


@contextmanager
def serving(project: Path, env: Mapping[str, str]) -> Iterator[str]:
    """The project under uvicorn on a socket this test bound (port 0), until the block ends; yields its address."""
    listener = socket.create_server(("127.0.0.1", 0))
    address = f"http://127.0.0.1:{listener.getsockname()[1]}"
    python = str(Path(env["PATH"].split(os.pathsep)[0]) / "python")
    command = [
        python,
        "-m",
        "uvicorn",
        "config.asgi:application",
        "--fd",
        str(listener.fileno()),
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(  # noqa: S603 - fixed command
        command,
        cwd=project,
        env=dict(env),
        pass_fds=[listener.fileno()],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until_healthy(address, server)
        yield address
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        listener.close()
        assert server.stderr is not None
        server.stderr.close()


def wait_until_healthy(address: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            assert server.stderr is not None
            raise AssertionError(f"the generated project's server exited:\n{server.stderr.read().decode()[-4000:]}")
        try:
            if httpx2.get(f"{address}/healthz", timeout=2).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the generated project's server did not answer /healthz within {SERVER_START_TIMEOUT} s")


def log_in_and_mint(address: str) -> httpx2.Response:
    """A login through the site's form, then `POST /api/sports-token` as the browser client makes it."""
    with httpx2.Client(base_url=address, timeout=10) as browser:
        form = browser.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert csrf is not None, form.text[:2000]
        credentials = {"username": OWNER, "password": OWNER_PASSWORD, "csrfmiddlewaretoken": csrf.group(1)}
        logged_in = browser.post("/accounts/login/", data=credentials)
        assert logged_in.status_code == 302, logged_in.text[:2000]
        return browser.post(
            "/api/sports-token", json={"reason": "initial"}, headers={"X-CSRFToken": browser.cookies["csrftoken"]}
        )
