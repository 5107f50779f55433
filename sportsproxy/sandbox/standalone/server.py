"""Start-up of the standalone sandbox, and its stop on SIGTERM or SIGINT.

In order: the data folder (a `--data` folder must be this user's alone: data.py), Django on the
standalone settings, migrations, the first key, a socket bound here (so `--port 0` tells its
port), then uvicorn serving the ASGI application on that socket (frames capped at the service's
message size). Once uvicorn accepts, the ready line goes to stdout (the first and only line
there); logs go to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from sportsproxy.sandbox.conf import MAX_BODY_BYTES as MAX_MESSAGE_BYTES
from sportsproxy.sandbox.standalone import SETTINGS_MODULE
from sportsproxy.sandbox.standalone.data import DATA_DIR_VARIABLE, PRIVATE_UMASK, DataFolderError, claim

logger = logging.getLogger("sportsproxy.sandbox.standalone")

GRACEFUL_STOP_SECONDS = 2  # open sockets are closed after this; the contract allows 5 s in all
FIRST_ACCOUNT = "sandbox-{tier}"  # the account of the key on the ready line


@dataclass(frozen=True)
class Options:
    host: str
    port: int
    data: Path | None
    tier: str
    env: str
    stop_with_parent: bool = False


def serve(options: Options, *, started: float) -> int:
    """Run until SIGTERM or SIGINT; the exit code (0 after a signal). `started`: time.monotonic() at launch."""
    signal.signal(signal.SIGTERM, _stop_now)  # a signal before uvicorn takes over stops the start-up cleanly
    signal.signal(signal.SIGINT, _stop_now)
    os.umask(PRIVATE_UMASK)  # every folder and file this process makes is its user's alone, from its first byte
    try:
        if options.data is not None:
            claim(options.data)
        data_dir = options.data or Path(tempfile.mkdtemp(prefix="sports-sandbox-"))
    except DataFolderError as refused:
        return _refuse(refused)
    try:
        try:
            api_key = _prepare(data_dir, options)
        except DataFolderError as refused:  # the settings found an earlier run's signing key that is not private
            return _refuse(refused)
        try:
            listener = _bind(options.host, options.port)
        except OSError as error:
            logger.error(  # a sentence that says what to do: a traceback would not help
                "Cannot listen on %s port %s: %s. Choose another --port, or 0 for a free one.",
                options.host,
                options.port,
                error.strerror,
            )
            return 1
        host, port = listener.getsockname()[:2]
        ready = {"baseUrl": f"http://{_url_host(host)}:{port}", "wsUrl": f"ws://{_url_host(host)}:{port}/sdk/v1/ws"}
        parent = os.getppid() if options.stop_with_parent else None
        server = _ReadyServer(_uvicorn_config(), {**ready, "apiKey": api_key}, started, parent)
        server.run(sockets=[listener])
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0
    finally:
        if options.data is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


def _refuse(refused: DataFolderError) -> int:
    sys.stderr.write(f"{refused}\n")  # a sentence, no traceback (Django's logging may not be set up yet)
    return 1


def _prepare(data_dir: Path, options: Options) -> str:
    """Django set up on the folder's database, migrated; returns the secret of a new first key."""
    # Always these settings, whatever DJANGO_SETTINGS_MODULE the starting process (a site's tests) has.
    os.environ.update({"DJANGO_SETTINGS_MODULE": SETTINGS_MODULE, DATA_DIR_VARIABLE: str(data_dir.resolve())})
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from sportsproxy.sandbox.accounts.quota import mirror_all_quotas
    from sportsproxy.sandbox.standalone.dashboard import create_key

    mirror_all_quotas()  # a --data folder's quotas, for the tokens of this run's fresh cache

    return create_key(FIRST_ACCOUNT.format(tier=options.tier), options.tier, options.env)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    listener.set_inheritable(True)
    return listener


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _uvicorn_config() -> uvicorn.Config:
    from sportsproxy.sandbox.standalone.asgi import application

    return uvicorn.Config(
        application,
        lifespan="off",
        ws="websockets-sansio",
        ws_per_message_deflate=False,  # compressing each event frame per subscriber costs more than it saves
        # A frame over the service's message size is closed with 1009 from its header, before its payload
        # is read (uvicorn's default buffers 16 MiB per frame), as `make serve` does (config/serve.py).
        ws_max_size=MAX_MESSAGE_BYTES,
        log_config=None,  # Django's LOGGING (settings.py) already sends every log to stderr
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
    )


class _ReadyServer(uvicorn.Server):
    """uvicorn's server, which prints the ready line once it accepts connections, and stops when
    the process that started it has ended (if `parent` is given: a test run killed mid-way)."""

    def __init__(self, config: uvicorn.Config, ready_line: dict[str, str], started: float, parent: int | None) -> None:
        super().__init__(config)
        self._ready_line = ready_line
        self._started = started
        self._parent = parent

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        sys.stdout.write(json.dumps(self._ready_line) + "\n")
        sys.stdout.flush()
        logger.info(
            "Sports sandbox ready in %.2f s at %s (WebSocket %s)",
            time.monotonic() - self._started,
            self._ready_line["baseUrl"],
            self._ready_line["wsUrl"],
        )

    async def on_tick(self, counter: int) -> bool:
        """uvicorn asks every 0.1 s whether to stop; an orphan (its parent gone) says yes."""
        if self._parent is not None and os.getppid() != self._parent:
            logger.warning("The process that started the sandbox (pid %d) has ended; stopping.", self._parent)
            return True
        return await super().on_tick(counter)


def _stop_now(signum: int, frame: FrameType | None) -> None:
    # Also what uvicorn hands a caught signal back to once it has stopped gracefully.
    raise SystemExit(0)
