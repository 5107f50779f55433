"""A Django site that is not this project: its own folder, virtual environment, settings,
URLs and database, with nothing of this repository but what an integrator takes.

`ForeignSite` writes the site, runs its `manage.py` and serves it with `runserver`; the
functions above it build this project's wheel and sdist and make virtual environments. Every
subprocess runs in the site's folder with a scrubbed environment, so neither this
repository nor the test run's settings can leak onto its `sys.path`.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import secrets
import socket
import subprocess
import sys
import textwrap
import time
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from tests.lock import pins

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOCKED = PROJECT_ROOT / "requirements-dev.txt"  # the lock's pins (but Django's) are what the venvs install at
INSTALL_TIMEOUT = 600  # seconds for a pip install from the package index on a fresh machine
COMMAND_TIMEOUT = 120
PASSWORD = "foreign-pass-123"
SITE_PACKAGE = "foreignsite"


def base_dependencies() -> list[str]:
    """The wheel's base dependencies as pyproject.toml declares them (the only place they are written)."""
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    return [re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0] for requirement in project["dependencies"]]


def dev_pins(*names: str) -> list[str]:
    """`name==version` for each of `names`, as the lock pins it (requirements-dev.txt pins the test tools)."""
    locked = pins(LOCKED)
    return [pin for name in names for pin in locked[name]]


def scrubbed_environment(**extra: str) -> dict[str, str]:
    """PATH, HOME and locale only: no PYTHONPATH, no DJANGO_* or SPORTS_* of the test run."""
    kept = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    return {**kept, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def run_status(
    command: list[str], *, cwd: Path, timeout: float = COMMAND_TIMEOUT, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Run a command to completion in a scrubbed environment plus `env`: (exit code, combined output)."""
    completed = subprocess.run(  # noqa: S603 - commands built by the tests themselves
        command,
        cwd=cwd,
        env=scrubbed_environment(**(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return completed.returncode, completed.stdout + completed.stderr


def run(
    command: list[str], *, cwd: Path, timeout: float = COMMAND_TIMEOUT, env: Mapping[str, str] | None = None
) -> str:
    """Run a command to completion; its combined output, or an AssertionError that shows it."""
    status, output = run_status(command, cwd=cwd, timeout=timeout, env=env)
    assert status == 0, f"{' '.join(command)} exited {status}:\n{output}"
    return output


def build_dists(source: Path, destination: Path) -> Path:
    """`uv build` of a clean checkout: its sdist, then the wheel built from that sdist (as an index's
    installer would build it), both in `destination`; returns `destination`."""
    build = [uv_binary(), "build", "--quiet", "--out-dir", str(destination), str(source)]
    run(build, cwd=source.parent, env=UV_ENVIRONMENT)
    return destination


# The machine's trust store, as pip's own configuration would name it (a proxy's certificate included).
UV_ENVIRONMENT = {"UV_SYSTEM_CERTS": "1"}


def uv_binary() -> str:
    """uv, the lock's installer (requirements-dev.txt pins it; the matrix installs it in every pair)."""
    from uv import find_uv_bin

    return str(find_uv_bin())


def running_django() -> str:
    """The Django release these tests run under: the matrix runs them once per supported Django."""
    return importlib.metadata.version("Django")


def constraints_for_running_django(directory: Path) -> Path:
    """The lock's pins without their hashes, with Django pinned at the release these tests run under instead.

    Hash-free: a hash in pip's constraints would turn on hash checking for the wheel built here too."""
    lines = [pin for name, locked in pins(LOCKED).items() if name != "django" for pin in locked]
    constraints = directory / "constraints.txt"
    constraints.write_text("\n".join([*lines, f"Django=={running_django()}", ""]))
    return constraints


def make_venv(path: Path, *requirements: str) -> Path:
    """A new virtual environment of this interpreter's Python with `requirements` installed at the
    versions the lock pins, and at the Django these tests run under; returns its interpreter.

    uv makes it (seconds, where pip takes a minute): these environments are where the parts run, not
    a test of pip. `new_venv` and `install` are pip's, for the tests that run pip as an integrator does."""
    constraints = constraints_for_running_django(path.parent)
    run([uv_binary(), "venv", "--quiet", "--python", sys.executable, str(path)], cwd=path.parent, env=UV_ENVIRONMENT)
    python = path / "bin" / "python"
    # No --compile-bytecode: compiling all of it costs 6 s of CPU an environment; Python compiles what a process
    # imports, once, and keeps it (the scrubbed environment lets it write __pycache__).
    uv_install = [uv_binary(), "pip", "install", "--quiet", "--python", str(python)]
    requirements_at_pins = ["-c", str(constraints), *requirements]
    run([*uv_install, *requirements_at_pins], cwd=path.parent, timeout=INSTALL_TIMEOUT, env=UV_ENVIRONMENT)
    return python


def new_venv(path: Path) -> Path:
    """An empty virtual environment of the Python running these tests; returns its interpreter."""
    run([sys.executable, "-m", "venv", str(path)], cwd=path.parent)
    return path / "bin" / "python"


def install(python: Path, *arguments: str) -> Path:
    """`pip install` into the environment of `python`, as an integrator would run it; returns `python`."""
    run([str(python), "-m", "pip", "install", "-q", *arguments], cwd=python.parents[2], timeout=INSTALL_TIMEOUT)
    return python


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port


SETTINGS = '''\
"""An existing Django site; the mint route's wiring is the three marked lines."""

from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "{secret_key}"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.staticfiles",
    "mintroute",  # wiring 1 of 3
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "foreignsite.urls"
TEMPLATES = [
    {{
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {{"context_processors": ["django.template.context_processors.request"]}},
    }}
]
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}}}
STATIC_URL = "static/"
# A request's unhandled error goes to the console with its traceback, as most sites log it.
LOGGING = {{
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {{"console": {{"class": "logging.StreamHandler"}}}},
    "loggers": {{"django.request": {{"handlers": ["console"], "level": "ERROR"}}}},
}}

SPORTS_API_KEY = {api_key!r}  # wiring 3 of 3
SPORTS_BASE_URL = {base_url!r}
'''

URLS = """\
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view()),
    path("", include("mintroute.urls")),  # wiring 2 of 3
]
"""

ASGI = """\
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "foreignsite.settings")
application = get_asgi_application()
"""

MANAGE = """\
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "foreignsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
"""

LOGIN_TEMPLATE = '<form method="post">{% csrf_token %}{{ form }}<button>Log in</button></form>\n'


@dataclass
class ForeignSite:
    """A site folder and the interpreter of its own virtual environment."""

    root: Path
    python: Path
    api_key: str
    base_url: str
    extra_settings: str = ""  # appended to its settings.py, as the site's own further settings
    extra_urls: str = ""  # appended to its urls.py
    environment: dict[str, str] = field(default_factory=dict)  # for its commands and its server
    log: list[str] = field(default_factory=list)  # everything its commands and server printed

    def write(self) -> ForeignSite:
        package = self.root / SITE_PACKAGE
        (self.root / "templates" / "registration").mkdir(parents=True, exist_ok=True)
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text("")
        (package / "settings.py").write_text(
            SETTINGS.format(api_key=self.api_key, base_url=self.base_url, secret_key=secrets.token_hex(32))
            + textwrap.dedent(self.extra_settings)
        )
        (package / "urls.py").write_text(URLS + textwrap.dedent(self.extra_urls))
        (package / "asgi.py").write_text(ASGI)
        (self.root / "manage.py").write_text(MANAGE)
        (self.root / "templates" / "registration" / "login.html").write_text(LOGIN_TEMPLATE)
        return self

    def settings_variant(self, name: str, overrides: str) -> str:
        """A settings module that is the site's settings plus `overrides`; returns its dotted name."""
        body = f"from {SITE_PACKAGE}.settings import *  # noqa: F403\n\n{textwrap.dedent(overrides)}"
        (self.root / SITE_PACKAGE / f"settings_{name}.py").write_text(body)
        return f"{SITE_PACKAGE}.settings_{name}"

    def manage(self, *arguments: str) -> str:
        output = run([str(self.python), "manage.py", *arguments], cwd=self.root, env=self.environment)
        self.log.append(output)
        return output

    def manage_status(self, *arguments: str) -> tuple[int, str]:
        """Run manage.py without asserting success: (exit code, combined output)."""
        status, output = run_status([str(self.python), "manage.py", *arguments], cwd=self.root, env=self.environment)
        self.log.append(output)
        return status, output

    def python_says(self, code: str) -> str:
        """What a snippet prints when run with the site's interpreter in the site's folder."""
        output = run([str(self.python), "-c", code], cwd=self.root, env=self.environment)
        self.log.append(output)
        return output.strip()

    def prepare(self, username: str = "site-user") -> None:
        """migrate, then a user to log in as."""
        self.manage("migrate", "--no-input", "-v", "0")
        create_user = ["createsuperuser", "--no-input", "--username", username, "--email", "user@example.com"]
        run(
            [str(self.python), "manage.py", *create_user],
            cwd=self.root,
            env={**self.environment, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
        )

    def _start(self, server_name: str, log_path: Path, attempts: int = 3) -> tuple[subprocess.Popen[bytes], int]:
        """The server listening on a free port: chosen again when another process takes it first."""
        attempt = 1
        while True:
            port = free_port()
            with log_path.open("w") as log_file:
                server = subprocess.Popen(  # noqa: S603 - fixed interpreter and arguments
                    [str(self.python), *SERVERS[server_name], *_address_arguments(server_name, port)],
                    cwd=self.root,
                    env=scrubbed_environment(**self.environment),
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                )
            try:
                _wait_until_listening(port, server, log_path)
            except PortTaken:
                if attempt == attempts:
                    raise
                attempt += 1
                continue
            except BaseException as error:
                server.kill()
                server.wait(timeout=10)
                error.add_note(f"The site's server printed:\n{log_path.read_text()}")
                raise
            return server, port

    @contextmanager
    def serving(self, server_name: str = "runserver") -> Iterator[str]:
        """The site served on a free port by `runserver` (WSGI) or `uvicorn` (ASGI, which must be
        installed in its environment); yields its base URL, and stops it (with a bounded wait) on exit."""
        log_path = self.root / f"{server_name}.log"
        server, port = self._start(server_name, log_path)
        url = f"http://127.0.0.1:{port}"
        try:
            yield url
        except BaseException as error:
            error.add_note(f"The site's server printed:\n{log_path.read_text()}")
            raise
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
            self.log.append(log_path.read_text())


SERVERS = {
    "runserver": ["manage.py", "runserver", "--noreload"],
    "uvicorn": ["-m", "uvicorn", f"{SITE_PACKAGE}.asgi:application", "--lifespan", "off"],
}


def _address_arguments(server_name: str, port: int) -> list[str]:
    return [f"127.0.0.1:{port}"] if server_name == "runserver" else ["--port", str(port)]


class PortTaken(Exception):
    """Another process took the free port between its choice and the server's bind."""


def _wait_until_listening(port: int, server: subprocess.Popen[bytes], log_path: Path) -> None:
    """Until `server` itself listens on `port`: a port chosen free can be taken by another process before the server
    binds it (the gate runs hundreds of servers at once), and a connection would then reach that one."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            printed = log_path.read_text()
            if "already in use" in printed:
                raise PortTaken(printed)
            raise AssertionError(f"the site's server exited {server.returncode}:\n{printed}")
        if _listens_on(server.pid, port):
            return
        time.sleep(0.1)
    raise AssertionError(f"the site's server did not listen within 30 s:\n{log_path.read_text()}")


def _listens_on(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on 127.0.0.1:`port` (Linux's /proc)."""
    listening = {
        f"socket:[{fields[9]}]"
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if (fields := line.split())[1] == f"0100007F:{port:04X}" and fields[3] == "0A"  # 0A: LISTEN
    }
    try:
        return any(os.readlink(fd) in listening for fd in Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:  # it exited meanwhile
        return False


@contextmanager
def log_in(site_url: str, username: str = "site-user", login_path: str = "/accounts/login/") -> Iterator[httpx2.Client]:
    """A browser logged in through the site's own login page, holding its session and CSRF cookies."""
    with httpx2.Client(base_url=site_url, timeout=30) as browser:
        login_page = browser.get(login_path)
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text)
        assert form_token is not None, login_page.text
        logged_in = browser.post(
            login_path,
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": form_token.group(1)},
        )
        assert logged_in.status_code == 302, logged_in.text
        yield browser
