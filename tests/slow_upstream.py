"""A stand-in for the service that answers `tokens.create` after a fixed delay, and nothing else.

It measures and tests the site, not the sandbox: each answer costs it almost nothing but the wait.
Serve it with `uvicorn tests.slow_upstream:app`; `SLOW_UPSTREAM_DELAY` sets the delay in seconds
(default 0.05). `GET /waiting` answers at once with how many requests it is holding, `GET /healthz` at
once with ok.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

DELAY_SECONDS = float(os.environ.get("SLOW_UPSTREAM_DELAY", "0.05"))
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJl"  # shaped like a JWT; nobody verifies it


_waiting = 0


def command(port: int | str) -> list[str]:
    """The command that serves the stand-in on 127.0.0.1:`port`."""
    return [sys.executable, "-m", "uvicorn", "tests.slow_upstream:app", "--host", "127.0.0.1", "--port", str(port)]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global _waiting
    if scope["type"] != "http":
        return
    if scope["path"] == "/waiting":
        await answer(send, {"waiting": _waiting})
        return
    if scope["path"] == "/healthz":  # what the bench's start-up polls, with a 1 s timeout of its own
        await answer(send, {"status": "ok"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    _waiting += 1
    try:
        await asyncio.sleep(DELAY_SECONDS)
    finally:
        _waiting -= 1
    try:
        request_id = json.loads(body).get("id")
    except (ValueError, AttributeError):
        request_id = None
    expires_at = (datetime.now(UTC) + timedelta(minutes=10)).isoformat()
    await answer(send, {"jsonrpc": "2.0", "id": request_id, "result": {"token": TOKEN, "expiresAt": expires_at}})


async def answer(send: Any, body: dict[str, Any]) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
