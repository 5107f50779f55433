"""config/serve.py: what `make serve` starts, and how it stops."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from config import serve
from sportsproxy.django.private_folder import PrivateFolderError

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_without_the_sandbox_only_gunicorn_serves() -> None:
    ((command, environment),) = serve.plan({"HOST": "0.0.0.0:9000"}, sandbox=False)
    assert command[1:4] == ["-m", "gunicorn", "--config"]
    assert command[4].endswith("config/gunicorn.conf.py")
    assert "SPORTS_PUBLIC_WS_URL" not in environment


def test_with_the_sandbox_uvicorn_serves_its_socket_on_the_next_port_and_the_page_looks_at_its_origin() -> None:
    (http, http_environment), (socket, _) = serve.plan({"HOST": "127.0.0.1:9000"}, sandbox=True)
    assert http[2] == "gunicorn"
    assert socket[2:4] == ["uvicorn", "config.socket_asgi:application"]  # the socket, and nothing else
    assert socket[socket.index("--port") + 1] == "9001"
    assert socket[socket.index("--ws-per-message-deflate") + 1] == "false"
    assert socket[socket.index("--ws-max-size") + 1] == "65536"  # the contract's frame cap (1009 above it)
    # Never the socket server's own address: a visitor's browser would look for it on the visitor's machine.
    # The page opens its own origin's /sdk/v1/ws, which the proxy routes here (tests/config/test_service_addresses.py).
    assert "SPORTS_PUBLIC_WS_URL" not in http_environment


def test_a_socket_address_and_public_url_from_the_environment_win() -> None:
    environment = {
        "SPORTS_SANDBOX_WS_HOST": "127.0.0.1:7000",
        "SPORTS_PUBLIC_WS_URL": "wss://example.com/sdk/v1/ws",
        "WEB_CONCURRENCY": "3",
    }
    (_, http_environment), (socket, _) = serve.plan(environment, sandbox=True)
    assert socket[socket.index("--port") + 1] == "7000"
    assert socket[socket.index("--workers") + 1] == "3"
    assert http_environment["SPORTS_PUBLIC_WS_URL"] == "wss://example.com/sdk/v1/ws"


def test_when_one_server_ends_the_other_is_stopped_and_its_code_returned() -> None:
    started = time.monotonic()
    code = serve.run([(SLEEPER, dict(os.environ)), ([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ))])
    assert code == 3
    assert time.monotonic() - started < serve.STOP_SECONDS


def test_sigterm_stops_both_servers_and_exits_0() -> None:
    launcher = subprocess.Popen(  # noqa: S603 - this interpreter
        [sys.executable, "-c", f"from config import serve; raise SystemExit(serve.run([({SLEEPER!r}, {{}})] * 2))"],
        cwd=serve.PROJECT_ROOT,
    )
    deadline = time.monotonic() + 30  # both started, however busy the machine
    while len(children := Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()) < 2:
        assert time.monotonic() < deadline, "the launcher did not start both servers within 30 s"
        time.sleep(0.1)
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=serve.STOP_SECONDS + 5) == 0
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)  # stopped and reaped


def test_a_sigterm_while_the_servers_are_starting_stops_the_started_ones_and_exits_0(tmp_path: Path) -> None:
    """A supervisor's stop can come before the last server has started: the first one here sends it at once."""
    started = tmp_path / "started"
    first = ["/bin/sh", "-c", f"echo $$ >> {started}; kill -TERM $PPID; exec sleep 60"]
    rest = ["/bin/sh", "-c", f"echo $$ >> {started}; exec sleep 60"]
    launcher = subprocess.Popen(  # noqa: S603 - this interpreter
        [
            sys.executable,
            "-c",
            f"from config import serve; raise SystemExit(serve.run([({first!r}, {{}})] + [({rest!r}, {{}})] * 30))",
        ],
        cwd=serve.PROJECT_ROOT,
    )
    code = launcher.wait(timeout=serve.STOP_SECONDS + 30)
    pids = [int(line) for line in started.read_text().split()]
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    for pid in alive:  # what a launcher killed by the signal would have orphaned
        os.kill(pid, signal.SIGKILL)
    assert code == 0
    assert not alive


def test_the_metrics_folder_is_made_private_or_emptied_of_the_last_runs_counts(tmp_path: Path) -> None:
    made, ours = serve.metrics_folder({})
    try:
        assert ours
        assert made.is_dir()
        assert made.stat().st_mode & 0o077 == 0
    finally:
        made.rmdir()
    named = tmp_path / "multiproc"
    named.mkdir()
    (named / "counter_4242.db").write_bytes(b"an earlier run's counts")
    (named / "notes.txt").write_text("not prometheus_client's")
    folder, ours = serve.metrics_folder({"PROMETHEUS_MULTIPROC_DIR": str(named)})
    assert (folder, ours) == (named, False)  # the operator's folder stays after the run
    assert sorted(path.name for path in named.iterdir()) == ["notes.txt"]


def test_the_socket_server_listens_on_loopback_unless_configured() -> None:
    (_, http_environment), (socket, _) = serve.plan({"HOST": "0.0.0.0:9000"}, sandbox=True)
    assert socket[socket.index("--host") + 1] == "127.0.0.1"
    assert socket[socket.index("--port") + 1] == "9001"
    assert "SPORTS_PUBLIC_WS_URL" not in http_environment
    ((_, _), (configured, _)) = serve.plan({"HOST": "0.0.0.0:9000", "SPORTS_SANDBOX_WS_HOST": "[::]:7000"}, True)
    assert configured[configured.index("--host") + 1] == "[::]"  # configured: any address


def test_both_servers_believe_forwarded_headers_from_the_trusted_proxies_only() -> None:
    proxies = serve.Proxies(allowed="10.0.0.5/32,10.1.0.0/16", forwarded_for_read=True)
    (_, http_environment), (socket, socket_environment) = serve.plan({"HOST": "127.0.0.1:9000"}, True, proxies)
    assert socket[socket.index("--forwarded-allow-ips") + 1] == "10.0.0.5/32,10.1.0.0/16"
    assert "--proxy-headers" in socket
    assert http_environment["FORWARDED_ALLOW_IPS"] == "10.0.0.5/32,10.1.0.0/16"  # gunicorn's configuration reads it
    assert socket_environment["FORWARDED_ALLOW_IPS"] == "10.0.0.5/32,10.1.0.0/16"
    ((_, _), (unread, _)) = serve.plan({"HOST": "127.0.0.1:9000", "FORWARDED_ALLOW_IPS": "*"}, True)
    assert "--no-proxy-headers" in unread  # SPORTS_TRUSTED_PROXY_COUNT = 0: X-Forwarded-For is not read
    assert "--forwarded-allow-ips" not in unread


def test_the_trusted_proxies_come_from_the_settings(settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXIES = ["10.0.0.5", "10.1.0.0/16", "::1"]
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    assert serve.proxies_of_the_settings() == serve.Proxies("10.0.0.5/32,10.1.0.0/16,::1/128", True)
    settings.SPORTS_TRUSTED_PROXY_COUNT = 0
    assert not serve.proxies_of_the_settings().forwarded_for_read


# --- an operator's metrics folder: the site's own, or no start -------------------------------------

NOBODY = pwd.getpwnam("nobody").pw_uid


def operators_folder(tmp_path: Path) -> Path:
    named = tmp_path / "multiproc"
    named.mkdir(mode=0o700)
    (named / "counter_4242.db").write_bytes(b"an earlier run's counts")
    return named


def open_to_all(named: Path) -> str:
    named.chmod(0o777)
    return f"The metrics folder {named} is open to other users (mode 0777). Run `chmod go-w {named}`"


def anothers_folder(named: Path) -> str:
    os.chown(named, NOBODY, NOBODY)
    return f"The metrics folder {named} belongs to another user (uid {NOBODY}): anyone who can write there"


def a_link_inside(named: Path) -> str:
    (named / "counter_77.db").symlink_to(named.parent / "elsewhere.db")
    return f"{named / 'counter_77.db'} in the metrics folder is a symbolic link"


def anothers_file_inside(named: Path) -> str:
    planted = named / "counter_1.db"
    planted.write_bytes(b"")
    os.chown(planted, NOBODY, NOBODY)
    return f"{planted} in the metrics folder belongs to another user (uid {NOBODY}), who could have planted it"


def a_file_others_can_write(named: Path) -> str:
    (named / "counter_4242.db").chmod(0o666)
    return f"{named / 'counter_4242.db'} in the metrics folder is writable by other users (mode 0666)"


@pytest.mark.parametrize(
    "spoil", [open_to_all, anothers_folder, a_link_inside, anothers_file_inside, a_file_others_can_write]
)
def test_an_operators_metrics_folder_that_is_not_the_sites_own_is_refused(
    tmp_path: Path, spoil: Callable[[Path], str]
) -> None:
    named = operators_folder(tmp_path)
    sentence = spoil(named)
    with pytest.raises(PrivateFolderError) as refused:
        serve.metrics_folder({"PROMETHEUS_MULTIPROC_DIR": str(named)})
    assert sentence in str(refused.value)
    assert "PROMETHEUS_MULTIPROC_DIR" in str(refused.value)  # what to change, if not the entry
    assert (named / "counter_4242.db").exists()  # refused before anything was emptied


def test_a_missing_operators_metrics_folder_is_made_private(tmp_path: Path) -> None:
    named = tmp_path / "new" / "multiproc"
    folder, ours = serve.metrics_folder({"PROMETHEUS_MULTIPROC_DIR": str(named)})
    assert (folder, ours) == (named, False)
    assert named.stat().st_mode & 0o077 == 0


def stop_recorder(log: Path, name: str) -> list[str]:
    """A server that writes `name` and the time to `log` when SIGTERM comes, then exits."""
    trap = f"trap 'echo {name} $(date +%s.%N) >> {log}; kill $!; exit 0' TERM"
    return ["/bin/sh", "-c", f"{trap}; echo {name} >> {log}.ready; sleep 60 & wait"]


def stop_times(launcher: subprocess.Popen[bytes], log: Path, signum: int) -> dict[str, float]:
    """Send `signum` to a launcher once both its servers run; when each server got its SIGTERM."""
    ready, deadline = log.with_name(f"{log.name}.ready"), time.monotonic() + 30
    while len(ready.read_text().split() if ready.exists() else []) < 2:
        assert time.monotonic() < deadline, "the launcher did not start both servers within 30 s"
        time.sleep(0.1)
    launcher.send_signal(signum)
    assert launcher.wait(timeout=serve.STOP_SECONDS + 10) == 0
    return {name: float(at) for name, at in (line.split() for line in log.read_text().splitlines())}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_stops_the_socket_server_after_the_drain_and_sigint_at_once(tmp_path: Path, signum: int) -> None:
    """gunicorn (the first server) drains itself from its SIGTERM on; the socket server serves through that drain."""
    log, drain = tmp_path / "stops", 1.0
    servers = [stop_recorder(log, "http"), stop_recorder(log, "socket")]
    launcher = subprocess.Popen(  # noqa: S603 - this interpreter
        [
            sys.executable,
            "-c",
            f"from config import serve; raise SystemExit(serve.run({[(s, {}) for s in servers]!r}, {drain}))",
        ],
        cwd=serve.PROJECT_ROOT,
    )
    stopped = stop_times(launcher, log, signum)
    if signum == signal.SIGTERM:
        # Each time is when that server's process handled its signal: the first may run late on a busy machine.
        assert stopped["socket"] - stopped["http"] >= drain - 0.1
    else:
        assert stopped["socket"] - stopped["http"] < drain  # Ctrl-C: both at once
