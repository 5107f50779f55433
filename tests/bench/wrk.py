"""wrk, the load generator of the serving and ASGI rows: one measure, read from its report.

wrk (Debian's package `wrk`) is C with a Lua hook per request, so the loader costs a fraction of
what the servers it loads cost; the rows that use it share the 2 cores with it all the same.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

THREADS = 2
UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
TIMEOUT_SECONDS = 10  # wrk's own per-request timeout (its default, 2 s, would cut a slow server's tail)


@dataclass(frozen=True)
class Load:
    """What one wrk run measured: 2xx answers a second, latency percentiles of every answer, and
    how many requests got no 2xx (a non-2xx status, or a socket error or timeout)."""

    rate: float
    p50_ms: float
    p99_ms: float
    requests: int
    failed: int


def missing() -> str | None:
    """Why the wrk rows cannot run here, or None."""
    return None if shutil.which("wrk") else "not run: install wrk (apt-get install wrk)"


def post_script(path: Path, body: str, headers: dict[str, str]) -> Path:
    """Writes a wrk Lua script that sends every request as this POST; returns its path."""
    lines = ['wrk.method = "POST"', f"wrk.body = '{body}'"]
    lines += [f'wrk.headers["{name}"] = "{value}"' for name, value in headers.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(url: str, *, seconds: float, connections: int = 64, script: Path | None = None) -> Load:
    """`connections` connections on THREADS threads for `seconds` against `url`."""
    command = ["wrk", f"-t{THREADS}", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
    command += ["--timeout", f"{TIMEOUT_SECONDS}s", *(["-s", str(script)] if script else []), url]
    completed = subprocess.run(  # noqa: S603 - fixed command
        command, capture_output=True, text=True, timeout=seconds + TIMEOUT_SECONDS + 60, check=True
    )
    return parse(completed.stdout)


def parse(report: str) -> Load:
    """A Load from wrk's report (`--latency` printed)."""
    requests = int(_field(r"(\d+) requests in", report))
    per_second = float(_field(r"Requests/sec:\s+([\d.]+)", report))
    found = re.search(r"Non-2xx or 3xx responses: (\d+)", report)
    non_2xx = int(found.group(1)) if found else 0
    found = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", report)
    socket_errors = sum(map(int, found.groups())) if found else 0
    return Load(
        rate=per_second * (requests - non_2xx) / requests if requests else 0.0,
        p50_ms=_percentile(50, report),
        p99_ms=_percentile(99, report),
        requests=requests,
        failed=non_2xx + socket_errors,
    )


def _percentile(percent: int, report: str) -> float:
    value, unit = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", report, re.MULTILINE).groups()  # type: ignore[union-attr]
    return float(value) * UNITS_MS[unit]


def _field(pattern: str, report: str) -> str:
    found = re.search(pattern, report)
    if found is None:
        raise RuntimeError(f"wrk's report has no match for {pattern!r}:\n{report}")
    return found.group(1)
