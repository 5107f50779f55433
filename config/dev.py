"""`make dev` (`python -m config.dev`): the site on `HOST` under `manage.py runserver`, against a sandbox service.

Where the site's sports-data service comes from, first match wins:

- SPORTS_BASE_URL set, in the environment or by hand in `.env`: that service, with its SPORTS_API_KEY. Nothing
  else starts.
- A site that does not mount the sandbox (SPORTS_SANDBOX off; by default where config/project.py's SANDBOX is
  "tests"), or `--standalone-sandbox`: the standalone
  sandbox (`python -m sportsproxy.sandbox serve`), a child of this process, on 127.0.0.1 at DEV_SANDBOX_PORT, else
  HOST's port plus one when that is free, else a free port. Its data (database, signing key) stay in `.sandbox/`
  (DEV_SANDBOX_DIR), a folder private to this user (0700), so its keys work from one run to the next. The first
  run's key goes into `.env`; later runs keep it while the sandbox accepts it.
- Otherwise (SPORTS_SANDBOX on): the site mounts the sandbox itself, and a key of its account `dev` goes into `.env`.

`.env` is the file the settings read (DJANGO_ENV_FILE, else the one beside manage.py; git-ignored). Only the lines
this command owns are added, changed or removed (SPORTS_BASE_URL and SPORTS_API_KEY, DEV_SANDBOX_BASE_URL, which
marks a SPORTS_BASE_URL as its own sandbox's, DJANGO_SECRET_KEY and SPORTS_SANDBOX_SIGNING_KEY when absent, so that
logins and tokens survive runserver's reloads, and DEV_USER_PASSWORD); every other line stays as it was. The file is
kept private (mode 0600).

Then: migrate, the user `dev` (a superuser, its password made once and kept in `.env`), `manage.py runserver HOST`,
and, once the site accepts connections, the line to log in with. The API key is never printed whole.

Ctrl-C (SIGINT) or SIGTERM stops both children: SIGTERM to each one's process group (runserver's reloader has a
child of its own), at most STOP_SECONDS of waiting, then SIGKILL. Either child ending stops the other, and this
exits 1 with a sentence saying which. Killed outright (SIGKILL), it leaves neither behind: on Linux each child
gets SIGTERM from the kernel when this process ends, and the sandbox watches its parent too. An address in use
on HOST is refused before anything starts. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Literal

from config import project

DESCRIPTION = "Serve the site with manage.py runserver against a sandbox service, in one command."
PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HOST = "127.0.0.1:8000"
USERNAME = "dev"
ACCOUNT = "dev"  # the mounted sandbox's account of the key
TIER = "growth"
SANDBOX_READY_SECONDS = 30.0  # the standalone sandbox prints its ready line in a few seconds
SITE_READY_SECONDS = 60.0  # runserver runs the system checks before it accepts
STOP_SECONDS = 5.0  # after SIGTERM, a child's process group still there is killed
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1  # prctl(2)
KEY_CHECK_TIMEOUT = 5.0

DATA_DIR_VARIABLE = "DEV_SANDBOX_DIR"
PORT_VARIABLE = "DEV_SANDBOX_PORT"
MARKER = "DEV_SANDBOX_BASE_URL"  # in .env: the SPORTS_BASE_URL this command wrote, its own sandbox's
PASSWORD = "DEV_USER_PASSWORD"  # noqa: S105 - the name of a variable
TRUE_WORDS = {"true", "on", "ok", "y", "yes", "1"}  # django-environ's, as the settings read DJANGO_DEBUG

Service = Literal["external", "standalone", "embedded"]


class DevError(Exception):
    """Why the start cannot go on; the message is a sentence that says what to do."""


class StopRequest:
    """The signal handler: SIGINT or SIGTERM asks the run to stop; each wait checks `requested`."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True


@dataclass
class Child:
    name: str  # as a sentence names it: "the site", "the sandbox service"
    process: subprocess.Popen[bytes]


@dataclass
class Run:
    """What one start has made so far: the children to stop, and the .env file."""

    env_file: Path
    host: str
    stop: StopRequest
    children: list[Child] = field(default_factory=list)

    def start(
        self, name: str, command: list[str], stdout: int | None = None, env: dict[str, str] | None = None
    ) -> Child:
        # A process group of its own: a stop reaches runserver's server as well as its reloader, and
        # Ctrl-C in the terminal reaches this process alone, which stops the children in order.
        process = subprocess.Popen(  # noqa: S603 - this interpreter and fixed arguments
            command,
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            env=env,
            process_group=0,
            # Before the program starts, in the child: safe here, as this process starts no threads.
            preexec_fn=end_with_parent if sys.platform == "linux" else None,
        )
        child = Child(name, process)
        self.children.append(child)
        return child

    def check(self) -> None:
        """Raise if a stop was asked for, or a child has ended."""
        if self.stop.requested:
            raise Stopped
        for child in self.children:
            code = child.process.poll()
            if code is not None:
                others = [other.name for other in self.children if other is not child]
                stopping = f": stopping {' and '.join(others)}" if others else ""
                raise DevError(
                    f"{capital(child.name)} stopped ({exit_status(code)}){stopping}. See its messages above."
                )


def end_with_parent() -> None:
    """In the child, before its program starts (Linux): SIGTERM when this process ends, even killed outright,
    so that a `kill -9` of make dev leaves no runserver behind (the sandbox also stops itself: --stop-with-parent)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Stopped(Exception):
    """SIGINT or SIGTERM arrived: stop the children, exit 0."""


def main(arguments: Sequence[str] | None = None) -> int:
    options = parser().parse_args(arguments)
    stop = StopRequest()
    # Before any child starts: a stop between two starts stops the started one, never orphans it.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    run: Run | None = None
    try:
        run = Run(env_file=env_file_path(), host=os.environ.get("HOST") or DEFAULT_HOST, stop=stop)
        develop(run, standalone=options.standalone_sandbox)
    except Stopped:
        return 0
    except DevError as error:
        say(f"make dev stopped: {error}", stream=sys.stderr)
        return 1
    finally:
        if run is not None:
            stop_children(run.children)
    return 0


def parser() -> argparse.ArgumentParser:
    arguments = argparse.ArgumentParser(prog="python -m config.dev", description=DESCRIPTION)
    arguments.add_argument(
        "--standalone-sandbox",
        action="store_true",
        help="Serve the sandbox as a process of its own even where the site would mount it (config/project.py).",
    )
    return arguments


def develop(run: Run, *, standalone: bool) -> None:
    """Everything up to the login line, then watch the children until a stop or an end."""
    refuse_production()
    bind_host, port = split_host(run.host)
    if not port_free(port, bind_host):  # else the login line would point at whatever listens there
        raise DevError(
            f"Something already listens on {run.host}: stop it, or choose another address (make dev HOST=...)."
        )
    values = read_env_file(run.env_file)
    make_private(run.env_file)
    updates: dict[str, str | None] = {}
    if not setting("DJANGO_SECRET_KEY", values):
        updates["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    password = setting(PASSWORD, values)
    if not password:
        password = updates[PASSWORD] = secrets.token_urlsafe(12)

    service = choose_service(values, standalone=standalone)
    if service == "external":
        base_url, api_key = setting("SPORTS_BASE_URL", values), setting("SPORTS_API_KEY", values)
        if not api_key:
            raise DevError(
                f"SPORTS_BASE_URL names a service ({base_url}), but SPORTS_API_KEY is not set: put that service's "
                f"key in {run.env_file} as SPORTS_API_KEY, or remove SPORTS_BASE_URL to use the sandbox."
            )
        say(f"Using the service at {base_url} (SPORTS_BASE_URL), with the key {masked(api_key)} (SPORTS_API_KEY).")
    elif service == "standalone":
        base_url, api_key = start_sandbox(run, values, port)
        updates |= {"SPORTS_BASE_URL": base_url, MARKER: base_url, "SPORTS_API_KEY": api_key}
        os.environ |= {"SPORTS_BASE_URL": base_url, "SPORTS_API_KEY": api_key}
    else:
        if values.get(MARKER):  # an earlier standalone run's address: the site mounts the sandbox now
            updates[MARKER] = None
            if values.get("SPORTS_BASE_URL") == values[MARKER]:
                updates["SPORTS_BASE_URL"] = None
        if not setting("SPORTS_SANDBOX_SIGNING_KEY", values):
            updates["SPORTS_SANDBOX_SIGNING_KEY"] = secrets.token_urlsafe(48)
    if updates:
        update_env_file(run.env_file, updates)
    run.check()

    prepare_site(run, values, password, embedded=service == "embedded")
    run.check()
    say(f"Starting the site on {run.host} (manage.py runserver)...")
    run.start("the site", [sys.executable, "manage.py", "runserver", run.host], env=one_process_environment(values))
    wait_until_accepting(run, connect_host(bind_host), port)
    say(f"Log in at http://{url_host(bind_host)}:{port}/ as {USERNAME} / {password}")
    say("Ctrl-C stops the site" + (" and the sandbox service." if service == "standalone" else "."))
    while True:
        run.check()
        time.sleep(POLL_SECONDS)


# --- The service ----------------------------------------------------------------------------------------------


def choose_service(values: dict[str, str], *, standalone: bool) -> Service:
    """A SPORTS_BASE_URL that is not this command's own sandbox's wins; then the project's choice."""
    base_url = setting("SPORTS_BASE_URL", values)
    if base_url and base_url != values.get(MARKER):
        return "external"
    return "embedded" if not standalone and mounts_the_sandbox(values) else "standalone"


def mounts_the_sandbox(values: dict[str, str]) -> bool:
    """SPORTS_SANDBOX as the site will read it when set (the environment or .env), else the project's choice."""
    value = setting("SPORTS_SANDBOX", values)
    return value.strip().lower() in TRUE_WORDS if value else project.SANDBOX == "embedded"


def one_process_environment(values: dict[str, str]) -> dict[str, str]:
    """runserver is one process: a per-process cache is no fault there, so "site" sharing's warning about it
    (mintroute.W011) is waived beside whatever the developer waives."""
    silenced = [check for check in setting("DJANGO_SILENCED_SYSTEM_CHECKS", values).split(",") if check.strip()]
    return {**os.environ, "DJANGO_SILENCED_SYSTEM_CHECKS": ",".join([*silenced, "mintroute.W011"])}


def start_sandbox(run: Run, values: dict[str, str], site_port: int) -> tuple[str, str]:
    """Start the standalone sandbox, wait (bounded) for its ready line; its address and the key to use."""
    data = Path(os.environ.get(DATA_DIR_VARIABLE) or PROJECT_ROOT / ".sandbox").absolute()
    port = sandbox_port(site_port)
    where = f"127.0.0.1:{port}" if port else "a free port of 127.0.0.1"
    say(f"Starting the sandbox service on {where}, its data in {data}/ ...")
    command = [sys.executable, "-m", "sportsproxy.sandbox", "serve", "--host", "127.0.0.1", "--port", str(port)]
    # --stop-with-parent: were this process killed outright, the sandbox would not outlive it.
    command += ["--data", str(data), "--stop-with-parent"]
    sandbox = run.start("the sandbox service", command, stdout=subprocess.PIPE)
    assert sandbox.process.stdout is not None
    ready = json.loads(ready_line(run, sandbox, sandbox.process.stdout))
    base_url: str = ready["baseUrl"]
    kept = values.get("SPORTS_API_KEY", "")
    if kept and key_accepted(kept, base_url):
        say(f"The sandbox service is ready at {base_url}; its key {masked(kept)} is in {run.env_file}.")
        return base_url, kept
    fresh: str = ready["apiKey"]
    say(f"The sandbox service is ready at {base_url}; its new key {masked(fresh)} goes into {run.env_file}.")
    return base_url, fresh


def sandbox_port(site_port: int) -> int:
    """DEV_SANDBOX_PORT; else the site's port plus one when it is free; else 0 (the sandbox picks a free one)."""
    chosen = os.environ.get(PORT_VARIABLE, "").strip()
    if chosen:
        if not chosen.isdigit() or int(chosen) > 65535:
            raise DevError(f"{PORT_VARIABLE} is {chosen!r}: give a port number, or 0 for a free one.")
        return int(chosen)
    candidate = site_port + 1
    return candidate if candidate <= 65535 and port_free(candidate) else 0


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def ready_line(run: Run, sandbox: Child, stdout: IO[bytes]) -> str:
    """The sandbox's first line on stdout, within SANDBOX_READY_SECONDS."""
    received = b""
    deadline = time.monotonic() + SANDBOX_READY_SECONDS
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        while b"\n" not in received:
            if run.stop.requested:
                raise Stopped
            if time.monotonic() > deadline:
                raise DevError(
                    f"The sandbox service printed no ready line within {SANDBOX_READY_SECONDS:g} s; "
                    "its messages are above."
                )
            if not selector.select(POLL_SECONDS):
                continue
            chunk = os.read(stdout.fileno(), 4096)
            if not chunk:
                code = sandbox.process.wait(timeout=STOP_SECONDS)
                raise DevError(
                    f"The sandbox service stopped ({exit_status(code)}) before it was ready. Its messages are above."
                )
            received += chunk
    return received.split(b"\n", 1)[0].decode()


def key_accepted(api_key: str, base_url: str) -> bool:
    """Whether the running sandbox takes `api_key` (it mints a token with it: one request of its quota)."""
    from sportsproxy import SportsAPIError, SportsClient, SportsError, UnauthorizedError

    try:
        client = SportsClient(api_key, base_url=base_url, timeout=KEY_CHECK_TIMEOUT, max_retries=0)
    except ValueError:  # not a key's shape
        return False
    with client:
        try:
            client.tokens.create(ttl=60)
        except UnauthorizedError:
            return False
        except SportsAPIError:
            return True  # the key was known; the refusal is about something else
        except SportsError as error:
            raise DevError(f"The sandbox service at {base_url} did not answer a check of the key: {error}") from None
    return True


# --- The site: .env, migrate, the key of the mounted sandbox, the user ----------------------------------------


def prepare_site(run: Run, values: dict[str, str], password: str, *, embedded: bool) -> None:
    """Django on the settings (reading the .env just written): migrate, the mounted sandbox's key, the user."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import call_command
    from django.db import connections

    try:
        django.setup()
    except ImproperlyConfigured as error:  # the settings' sentence says what to set
        raise DevError(str(error)) from None
    say("Migrating the database...")
    call_command("migrate", interactive=False, verbosity=0, skip_checks=True)
    run.check()
    if embedded:
        api_key = mounted_sandbox_key(run.env_file, values)
        os.environ["SPORTS_API_KEY"] = api_key  # over a value read from .env before it was replaced
    ensure_user(password)
    connections.close_all()  # this process only waits from here on


def mounted_sandbox_key(env_file: Path, values: dict[str, str]) -> str:
    """SPORTS_API_KEY for the mounted sandbox: the configured key when the sandbox knows it and it is
    active (registered into a fresh database), else a new key of the account `dev`, written to .env."""
    from sportsproxy.sandbox.accounts.keys import KEY_PATTERN, hash_secret, issue_key, register_key
    from sportsproxy.sandbox.models import Account, ApiKey

    account, _ = Account.objects.get_or_create(name=ACCOUNT, defaults={"tier": TIER})
    from_environment = bool(os.environ.get("SPORTS_API_KEY")) and "SPORTS_API_KEY" not in values
    configured = setting("SPORTS_API_KEY", values)
    if configured and KEY_PATTERN.match(configured):
        known = ApiKey.objects.filter(secret_hash=hash_secret(configured)).first()
        if known is None:
            key = register_key(account, configured)
            say(f"The sandbox key {masked(configured)} (SPORTS_API_KEY) is now the sandbox's key {key.public_id}.")
            return configured
        if known.is_active:
            say(f"The sandbox key {masked(configured)} (SPORTS_API_KEY) is key {known.public_id}.")
            return configured
    if configured and from_environment:
        raise DevError(
            f"SPORTS_API_KEY in the environment ({masked(configured)}) is revoked or not a sandbox key: unset it, "
            f"and make dev keeps a key of its own in {env_file}."
        )
    key, secret = issue_key(account, "test")
    update_env_file(env_file, {"SPORTS_API_KEY": secret})
    why = "replaces the one that was revoked or malformed" if configured else "is new"
    say(f"The sandbox key {key.public_id} ({masked(secret)}) {why}; it is in {env_file} as SPORTS_API_KEY.")
    return secret


def ensure_user(password: str) -> None:
    """The user `dev` (a superuser, for the admin pages too), with `password`."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    user = users.objects.filter(username=USERNAME).first()
    if user is None:
        users.objects.create_superuser(username=USERNAME, email="", password=password)
        say(f"Created the user {USERNAME}.")
    elif not user.check_password(password) or not user.is_active:
        user.set_password(password)
        user.is_active = True
        user.save()
        say(f"Set the password of the user {USERNAME} to the one in {PASSWORD}.")


def refuse_production() -> None:
    value = os.environ.get("DJANGO_DEBUG")
    if value is not None and value.strip().lower() not in TRUE_WORDS:
        raise DevError(
            "DJANGO_DEBUG turns debug off in the environment, and make dev is development (production reads no "
            ".env): unset DJANGO_DEBUG. For production, run make serve."
        )


# --- .env -----------------------------------------------------------------------------------------------------


def env_file_path() -> Path:
    named = os.environ.get("DJANGO_ENV_FILE")
    if named is None:
        return PROJECT_ROOT / ".env"
    if not named:
        raise DevError(
            "DJANGO_ENV_FILE is empty, so the site would read no .env, where make dev keeps the service's address "
            "and key: unset DJANGO_ENV_FILE, or name a file."
        )
    return Path(named)


def setting(name: str, values: dict[str, str]) -> str:
    """A variable as the settings see it: the environment's value, else the .env file's."""
    return os.environ.get(name) or values.get(name, "")


def read_env_file(env_file: Path) -> dict[str, str]:
    """NAME=value pairs of a .env file (comments and blank lines skipped)."""
    if not env_file.exists():
        return {}
    pairs = {}
    for line in env_file.read_text().splitlines():
        name = variable_of(line)
        if name:
            pairs[name] = line.partition("=")[2].strip().strip("'\"")
    return pairs


def variable_of(line: str) -> str:
    """The name a .env line sets, or "" for a comment, a blank line or anything else."""
    line = line.strip().removeprefix("export ").strip()
    if not line or line.startswith("#") or "=" not in line:
        return ""
    return line.partition("=")[0].strip()


def update_env_file(env_file: Path, updates: dict[str, str | None]) -> None:
    """Set (a value) or remove (None) these variables' lines, in place; every other line as it was."""
    lines = env_file.read_text().splitlines() if env_file.exists() else []
    written: set[str] = set()
    kept = []
    for line in lines:
        name = variable_of(line)
        if name not in updates:
            kept.append(line)
            continue
        value = updates[name]
        if value is not None and name not in written:  # a second line for the same name goes
            kept.append(f"{name}={value}")
            written.add(name)
    kept += [f"{name}={value}" for name, value in updates.items() if value is not None and name not in written]
    replace_privately(env_file, "\n".join(kept) + "\n")


def make_private(env_file: Path) -> None:
    if env_file.exists() and env_file.stat().st_mode & 0o077:
        env_file.chmod(0o600)
        say(f"Made {env_file} private (mode 0600): it holds secrets.")


def replace_privately(path: Path, text: str) -> None:
    """Write `path` whole, mode 0600 from its first byte (mkstemp), and swap it in with one rename."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# --- Addresses, waiting, stopping -----------------------------------------------------------------------------


def split_host(host: str) -> tuple[str, int]:
    """runserver's HOST ("127.0.0.1:8000", "[::1]:8000", or a port alone) as an address and a port."""
    name, _, port = host.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise DevError(f"HOST is {host!r}: give an address and a port, such as {DEFAULT_HOST}.")
    return name.strip("[]") or "127.0.0.1", int(port)


def connect_host(bind_host: str) -> str:
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind_host, bind_host)  # noqa: S104 - what runserver binds


def url_host(bind_host: str) -> str:
    shown = connect_host(bind_host)
    return f"[{shown}]" if ":" in shown else shown


def wait_until_accepting(run: Run, host: str, port: int) -> None:
    deadline = time.monotonic() + SITE_READY_SECONDS
    while True:
        run.check()
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            pass
        else:
            return
        if time.monotonic() > deadline:
            raise DevError(
                f"The site did not accept connections on {run.host} within {SITE_READY_SECONDS:g} s; "
                "its messages are above."
            )
        time.sleep(POLL_SECONDS)


def stop_children(children: list[Child]) -> None:
    """SIGTERM to each child's process group; after STOP_SECONDS in all, SIGKILL to any group still there."""
    for child in children:
        signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        while group_alive(child) and time.monotonic() < deadline:  # runserver's server, after its reloader
            time.sleep(0.05)
        if group_alive(child) or child.process.poll() is None:
            say(f"{capital(child.name)} did not stop within {STOP_SECONDS:g} s: killed.", stream=sys.stderr)
            signal_group(child, signal.SIGKILL)
            child.process.wait(timeout=STOP_SECONDS)
        if child.process.stdout is not None:
            child.process.stdout.close()


def signal_group(child: Child, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # every process of the group has ended
        os.killpg(child.process.pid, signum)


def group_alive(child: Child) -> bool:
    try:
        os.killpg(child.process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def exit_status(code: int) -> str:
    return f"signal {-code}" if code < 0 else f"exit code {code}"


def masked(api_key: str) -> str:
    """A key as it may be printed: its kind and its last four characters."""
    kind = api_key[:8] if api_key.startswith(("sk_test_", "sk_live_")) else ""
    return f"{kind}...{api_key[-4:]}"


def capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def say(line: str, stream: IO[str] | None = None) -> None:
    print(line, file=stream or sys.stdout, flush=True)


if __name__ == "__main__":
    sys.exit(main())
