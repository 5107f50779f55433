"""`python -m sportsproxy.sandbox serve`: the sandbox alone, as a test double (needs the `sandbox` extra)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sportsproxy.sandbox.conf import ENVIRONMENTS, TIERS


def parser() -> argparse.ArgumentParser:
    commands = argparse.ArgumentParser(prog="python -m sportsproxy.sandbox", description=__doc__)
    actions = commands.add_subparsers(dest="command", required=True)
    serve = actions.add_parser(
        "serve",
        help="Serve HTTP and WebSocket on one address; print one JSON line (baseUrl, wsUrl, apiKey) when ready.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="Address to listen on (default: 127.0.0.1).")
    serve.add_argument("--port", type=int, default=0, help="Port to listen on; 0 picks a free one (default: 0).")
    serve.add_argument(
        "--data",
        type=Path,
        help="Folder for the database and signing key, kept across runs: yours alone (refused if another user "
        "owns it or others can write to it), created mode 0700 if missing (default: a temporary folder, removed "
        "at exit).",
    )
    serve.add_argument("--tier", choices=TIERS, default="growth", help="Tier of the first key's account.")
    serve.add_argument("--env", choices=ENVIRONMENTS, default="test", help="Environment of the first key.")
    serve.add_argument(
        "--stop-with-parent",
        action="store_true",
        help="Stop when the process that started this one ends (the pytest plugin passes it).",
    )
    return commands


def main(arguments: list[str] | None = None) -> int:
    started = time.monotonic()  # Django, uvicorn and the migrations load after this: the logged time counts them
    options = parser().parse_args(arguments)
    from sportsproxy.sandbox.standalone.server import Options, serve

    chosen = Options(
        host=options.host,
        port=options.port,
        data=options.data,
        tier=options.tier,
        env=options.env,
        stop_with_parent=options.stop_with_parent,
    )
    return serve(chosen, started=started)


if __name__ == "__main__":
    sys.exit(main())
