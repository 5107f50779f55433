"""`make serve`: the production configuration, served from the environment (docs/deploy.md).

Production always: debug is off when `DJANGO_DEBUG` is unset, and a `DJANGO_DEBUG` that turns it
on refuses the start (`manage.py runserver` is the development server). With debug off the settings read no
`.env` file (config/settings.py).

- The site's HTTP: gunicorn with threaded WSGI workers on `HOST` (config/gunicorn.conf.py).
- With the sandbox mounted (`SPORTS_SANDBOX`), its WebSocket too: uvicorn serving only the
  socket (config/socket_asgi.py: any other request is 404), on `SPORTS_SANDBOX_WS_HOST` (default:
  `HOST`'s port plus one), with as many worker processes. The page opens the socket at its own
  origin's `/sdk/v1/ws` (`wss:` under HTTPS), which the proxy in front routes to this server
  (the docs' nginx socket route), unless `SPORTS_PUBLIC_WS_URL` names another address: never this
  server's own address, which a visitor's browser would look for on the visitor's machine.

Both servers believe forwarded headers only from `SPORTS_TRUSTED_PROXIES`, as the route's limits do
(their FORWARDED_ALLOW_IPS is set from it), and uvicorn reads X-Forwarded-For only with
`SPORTS_TRUSTED_PROXY_COUNT` above 0.

With SPORTS_METRICS on, the workers count in prometheus_client's multiprocess mode: a folder for
their files (PROMETHEUS_MULTIPROC_DIR, or a new private one) is emptied before they start, so counts
start from zero with each start, and the new folder is removed after they stop. A folder the operator
names must be the site's user's alone, as the sandbox's `--data` folder (sportsproxy/django/private_folder.py):
owned by that user, not writable by group or others, and nothing inside a link, another user's file or
writable by others; otherwise the start is refused with one sentence naming the entry.

Before either starts, the deploy checks run (`manage.py check --deploy`): any error, such as
a per-process rate-limit cache or a weak secret, refuses the start with its id and its fix.
The two run side by side, and either one ending stops the other. SIGTERM drains (config/drain.py):
gunicorn gets it at once, and its workers answer /readyz 503 while they serve for WEB_DRAIN_SECONDS
more; the socket server gets it when that drain is over, so it serves as long as the site does.
SIGINT (Ctrl-C) stops both at once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from config.drain import drain_seconds
from mintroute.conf import DEFAULT_TRUSTED_PROXIES
from sportsproxy.django.private_folder import PrivateFolderError, Wording, claim
from sportsproxy.sandbox.conf import MAX_BODY_BYTES as MAX_MESSAGE_BYTES

Process = tuple[list[str], dict[str, str]]  # a command and its environment

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HOST = "127.0.0.1:8000"
STOP_SECONDS = 15  # after SIGTERM (and the drain), a server that has not exited by then is killed
SOCKET_APPLICATION = "config.socket_asgi:application"  # the socket, and nothing else
DEBUG_REFUSAL = (
    "DJANGO_DEBUG turns debug on, and make serve is production: unset DJANGO_DEBUG (or set it to 0). "
    "For development, run manage.py runserver."
)


def http_command() -> list[str]:
    return [sys.executable, "-m", "gunicorn", "--config", str(PROJECT_ROOT / "config" / "gunicorn.conf.py")]


def socket_address(environment: dict[str, str]) -> str:
    """Where the sandbox's WebSocket is served: SPORTS_SANDBOX_WS_HOST, or loopback on HOST's port plus
    one (the proxy in front reaches it there; nobody else should)."""
    if environment.get("SPORTS_SANDBOX_WS_HOST"):
        return environment["SPORTS_SANDBOX_WS_HOST"]
    _, _, port = (environment.get("HOST") or DEFAULT_HOST).rpartition(":")
    return f"127.0.0.1:{int(port) + 1}"


def socket_command(
    address: str, environment: dict[str, str], proxies: Proxies | None = None, application: str = SOCKET_APPLICATION
) -> list[str]:
    """uvicorn as make serve runs it for the sandbox's socket (`application` another one for benchmarks)."""
    proxies = proxies or Proxies()
    host, _, port = address.rpartition(":")
    workers = environment.get("WEB_CONCURRENCY") or str(os.cpu_count() or 1)
    command = [sys.executable, "-m", "uvicorn", application, "--host", host, "--port", port]
    command += ["--workers", workers, "--lifespan", "off"]
    if proxies.forwarded_for_read:
        command += ["--proxy-headers", "--forwarded-allow-ips", proxies.allowed]
    else:
        command += ["--no-proxy-headers"]
    # Per-message deflate would compress every event frame once per subscriber (docs/service.md).
    command += ["--ws", "websockets-sansio", "--ws-per-message-deflate", "false"]
    # A frame over the service's message size is refused (close 1009) from its header, before its
    # payload is read: uvicorn's default would buffer 16 MiB per frame, even before `auth`.
    command += ["--ws-max-size", str(MAX_MESSAGE_BYTES)]
    command += ["--timeout-graceful-shutdown", "5", "--log-level", "warning"]
    return command


MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's variable (mintroute/metrics.py)
# The workers' counts are what /metrics serves: a folder the operator names must be the site's own.
METRICS_FOLDER = Wording(name="metrics folder", harm="forge the site's counts", option=MULTIPROCESS_DIR)
NO_SHARED_WRITE = 0o022  # added to the servers' umask with metrics on: their files stay the site's user's


def claim_metrics_folder(environment: dict[str, str]) -> None:
    """Refuse (PrivateFolderError) the operator's PROMETHEUS_MULTIPROC_DIR, made when missing, unless it and
    everything in it is the site's user's alone: no link, nobody else's file, nothing group or others can write."""
    named = environment.get(MULTIPROCESS_DIR)
    if named:
        claim(Path(named), METRICS_FOLDER)


def metrics_folder(environment: dict[str, str]) -> tuple[Path, bool]:
    """The workers' metrics folder, checked (`claim_metrics_folder`) and emptied, and whether this start
    made it (and removes it after)."""
    named = environment.get(MULTIPROCESS_DIR)
    if not named:
        return Path(tempfile.mkdtemp(prefix="sports-metrics-")), True  # mode 0700
    claim_metrics_folder(environment)
    folder = Path(named)
    for stale in folder.glob("*.db"):  # the last run's counts: a new start counts from zero
        stale.unlink()
    return folder, False


@dataclass(frozen=True)
class Proxies:
    """Whose forwarded headers the servers believe: `allowed`, FORWARDED_ALLOW_IPS's comma-separated
    addresses and networks (SPORTS_TRUSTED_PROXIES); X-Forwarded-For only if `forwarded_for_read`."""

    allowed: str = ",".join(DEFAULT_TRUSTED_PROXIES)
    forwarded_for_read: bool = False


def plan(environment: dict[str, str], sandbox: bool, proxies: Proxies = Proxies()) -> list[Process]:
    """The processes to start, each with its environment."""
    environment = {**environment, "FORWARDED_ALLOW_IPS": proxies.allowed}  # read by gunicorn's configuration
    if not sandbox:
        return [(http_command(), environment)]
    address = socket_address(environment)
    return [(http_command(), environment), (socket_command(address, environment, proxies), environment)]


def proxies_of_the_settings() -> Proxies:
    """SPORTS_TRUSTED_PROXIES and SPORTS_TRUSTED_PROXY_COUNT, as the route's limits read them."""
    from mintroute import conf

    allowed = ",".join(str(network) for network in conf.trusted_proxies())
    return Proxies(allowed=allowed, forwarded_for_read=conf.trusted_proxy_count() > 0)


def run(processes: list[Process], drain: float = 0.0) -> int:
    """Start every process; when one ends or a stop signal comes, stop the rest. Its exit code.
    On SIGTERM the first process (the site's gunicorn, which drains itself) is told at once and the
    others `drain` seconds later, so they serve through its drain."""
    stopped_by = 0  # the stop signal, once one came

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopped_by
        stopped_by = stopped_by or signum

    # Before the first child starts: a stop signal between two starts must stop the started ones, not orphan them.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    children: list[subprocess.Popen[bytes]] = []
    for command, env in processes:
        if stopped_by:
            break
        children.append(subprocess.Popen(command, cwd=PROJECT_ROOT, env=env))  # noqa: S603
    while not stopped_by and all(child.poll() is None for child in children):
        time.sleep(0.2)
    ended = next((child.returncode for child in children if child.returncode is not None), 0)
    code = 0 if stopped_by else (128 - ended if ended < 0 else ended)  # killed by signal N: 128 + N, as shells say
    draining = stopped_by == signal.SIGTERM and drain > 0
    first, later = (children[:1], children[1:]) if draining else (children, [])
    terminate(first)
    drained = time.monotonic() + drain
    while later and time.monotonic() < drained and all(child.poll() is None for child in later):
        time.sleep(0.1)
    terminate(later)
    deadline = time.monotonic() + STOP_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return code


def terminate(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each child still running."""
    for child in children:
        if child.poll() is None:
            child.terminate()


def refusal() -> str | None:
    """Why this environment must not serve (the deploy checks' errors, each with its id and fix; with
    metrics on, an operator's metrics folder that is not the site's own), or None."""
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    try:
        django.setup()
        from django.conf import settings

        if settings.DEBUG:
            return DEBUG_REFUSAL
        drain_seconds(os.environ)
        # Warnings are printed and served anyway; an error (a per-process rate-limit cache, a weak
        # secret, ...) stops the start, since every worker would serve it.
        call_command("check", deploy=True, fail_level="ERROR")
        if settings.SPORTS_METRICS:
            claim_metrics_folder(dict(os.environ))
    except ImproperlyConfigured as error:  # the settings say what is missing and how to set it
        return str(error)
    except PrivateFolderError as error:  # the sentence names the entry and what to do
        return str(error)
    except SystemCheckError as error:
        return f"fix the errors below and start again.\n{error}"
    except ValueError as error:  # WEB_DRAIN_SECONDS: the sentence says what to write
        return str(error)
    return None


def main(arguments: list[str]) -> None:
    """Serve; with `--check`, only run the deploy checks (make serve runs them before `migrate`
    touches the database, and again here, after it, for what only a migrated database shows)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "0")  # production unless told otherwise (and then refused)
    reason = refusal()
    if reason is not None:
        sys.exit(f"make serve refuses to start: {reason}")
    if arguments == ["--check"]:
        return
    from django.conf import settings

    environment = dict(os.environ)
    sandbox, proxies, drain = bool(settings.SPORTS_SANDBOX), proxies_of_the_settings(), drain_seconds(environment)
    if not settings.SPORTS_METRICS:
        sys.exit(run(plan(environment, sandbox=sandbox, proxies=proxies), drain))
    try:
        folder, made = metrics_folder(environment)
    except PrivateFolderError as error:
        sys.exit(f"make serve refuses to start: {error}")
    os.umask(os.umask(0) | NO_SHARED_WRITE)  # the workers' files: never writable by group or others
    try:
        code = run(plan({**environment, MULTIPROCESS_DIR: str(folder)}, sandbox=sandbox, proxies=proxies), drain)
    finally:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
