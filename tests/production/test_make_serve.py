"""`make serve` in production (DJANGO_DEBUG off): it refuses to start on a deploy check's error,
with the id and the sentence that says how to fix it, and starts and serves with a correct
environment (PostgreSQL, Redis), its sandbox socket refusing frames over 65,536 bytes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import pwd
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import psycopg
import pytest
from django.core.management.utils import get_random_secret_key
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests import stores
from tests.production.cluster import (
    PRODUCTION,
    PROJECT_ROOT,
    REDIS_URL,
    Cluster,
    free_port,
    require_engines,
)
from tests.support import envelope

REFUSED_WITHIN_SECONDS = 60  # a refusal exits at once; a start that was not refused never exits
MAX_FRAME_BYTES = 65_536


def production_environment(**overrides: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_ENV_FILE": "",
        **PRODUCTION,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "SPORTS_SANDBOX_SIGNING_KEY": secrets.token_urlsafe(48),
        "DATABASE_URL": stores.DATABASE_URL,  # read only: every start here is refused or checked
        "REDIS_URL": REDIS_URL,
        "SPORTS_BASE_URL": "",
        "SPORTS_SANDBOX": "1",
        "SPORTS_API_KEY": "sk_test_" + secrets.token_urlsafe(32),
        "HOST": f"127.0.0.1:{free_port()}",
        "SPORTS_SANDBOX_WS_HOST": f"127.0.0.1:{free_port()}",
        "WEB_CONCURRENCY": "1",
        **overrides,
    }


def serve_expecting_refusal(
    command: list[str], environment: dict[str, str], cwd: Path = PROJECT_ROOT
) -> tuple[int, str]:
    """Run the launcher; (exit code, stdout + stderr). A launcher that serves instead is stopped."""
    launcher = subprocess.Popen(  # noqa: S603 - fixed command
        command,
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a stop reaches every server it started
    )
    try:
        output, _ = launcher.communicate(timeout=REFUSED_WITHIN_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGTERM)  # config.serve stops its servers
        launcher.communicate(timeout=30)
        pytest.fail(f"make serve started instead of refusing (it served for {REFUSED_WITHIN_SECONDS} s)")
    return launcher.returncode, output


@pytest.fixture(scope="module", autouse=True)
def _engines() -> None:
    require_engines()


SECRET_KEY = get_random_secret_key()
REFUSALS = {
    "no Redis": ({"REDIS_URL": ""}, "mintroute.E006", "REDIS_URL"),
    "short secret": ({"DJANGO_SECRET_KEY": "x"}, "mintroute.E007", "DJANGO_SECRET_KEY"),
    "secret of 4 characters": ({"DJANGO_SECRET_KEY": "abcd" * 20}, "mintroute.E007", "DJANGO_SECRET_KEY"),
    "secret abcde x 10": ({"DJANGO_SECRET_KEY": "abcde" * 10}, "mintroute.E007", "DJANGO_SECRET_KEY"),
    "startproject's secret": (
        {"DJANGO_SECRET_KEY": "django-insecure-" + secrets.token_hex(32)},
        "mintroute.E007",
        "DJANGO_SECRET_KEY",
    ),
    "signing key = secret": (
        {"DJANGO_SECRET_KEY": "s3cret-" + "k" * 60, "SPORTS_SANDBOX_SIGNING_KEY": "s3cret-" + "k" * 60},
        "sandbox.E001",
        "SPORTS_SANDBOX_SIGNING_KEY",
    ),
    "signing key a x 32": ({"SPORTS_SANDBOX_SIGNING_KEY": "a" * 32}, "sandbox.E002", "SPORTS_SANDBOX_SIGNING_KEY"),
    "a guessable secret phrase": (
        {"DJANGO_SECRET_KEY": "this-is-my-very-secret-production-key-please-change"},
        "mintroute.E007",
        "DJANGO_SECRET_KEY",
    ),
    "signing key = secret reversed": (
        {"DJANGO_SECRET_KEY": SECRET_KEY, "SPORTS_SANDBOX_SIGNING_KEY": SECRET_KEY[::-1]},
        "sandbox.E001",
        "SPORTS_SANDBOX_SIGNING_KEY",
    ),
    "signing key 'short'": ({"SPORTS_SANDBOX_SIGNING_KEY": "short"}, "sandbox.E002", "SPORTS_SANDBOX_SIGNING_KEY"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_make_serve_refuses_to_start(case: str) -> None:
    overrides, check_id, variable = REFUSALS[case]
    environment = production_environment(**overrides)
    code, output = serve_expecting_refusal([sys.executable, "-m", "config.serve"], environment)
    assert code != 0
    assert f"({check_id})" in output
    assert variable in output  # the sentence says what to set
    assert "make serve refuses to start" in output
    assert "Traceback" not in output
    if len(environment["DJANGO_SECRET_KEY"]) > 8:  # a longer secret would be recognisable in the output
        assert environment["DJANGO_SECRET_KEY"] not in output


def test_the_makefile_target_refuses_before_it_migrates() -> None:
    database = f"sports_serve_{secrets.token_hex(4)}"  # a fresh, empty production database
    with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    try:
        environment = production_environment(REDIS_URL="", DATABASE_URL=stores.postgres_url(database))
        code, output = serve_expecting_refusal(["make", "--no-print-directory", "serve"], environment)
        with psycopg.connect(stores.postgres_url(database)) as connection:
            row = connection.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
            tables = row.fetchone()
    finally:
        with psycopg.connect(stores.DATABASE_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    assert code != 0
    assert "(mintroute.E006)" in output
    assert "make serve refuses to start" in output
    assert tables == (0,)  # refused before `migrate` wrote anything


def check_deploy(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`manage.py check --deploy` as make serve runs it, in its own process."""
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_random_hexadecimal_secrets_and_a_test_key_pass_the_deploy_checks() -> None:
    environment = production_environment(
        DJANGO_SECRET_KEY=secrets.token_hex(32), SPORTS_SANDBOX_SIGNING_KEY=secrets.token_hex(32)
    )
    completed = check_deploy(environment)
    assert completed.returncode == 0, completed.stderr
    assert "sportsproxy.W002" in completed.stderr  # the sk_test_ key: a warning, never a refusal


def test_a_single_process_site_may_waive_e006() -> None:
    # In "login" sharing: "site" sharing on a per-process cache is mintroute.E011 too, whichever E006 waives.
    environment = production_environment(
        REDIS_URL="", DJANGO_SILENCED_SYSTEM_CHECKS="mintroute.E006", SPORTS_TOKEN_SHARING="login"
    )
    completed = check_deploy(environment)
    assert completed.returncode == 0, completed.stderr
    assert "mintroute.E006" not in completed.stdout + completed.stderr


def run_in(checkout: Path, command: list[str], environment: dict[str, str]) -> str:
    completed = subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
        command, cwd=checkout, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout + completed.stderr


@pytest.mark.parametrize("value", ["1", "true", "on"])
def test_make_serve_refuses_debug_on(value: str) -> None:
    code, output = serve_expecting_refusal(
        [sys.executable, "-m", "config.serve"], production_environment(DJANGO_DEBUG=value)
    )
    assert code != 0
    assert "make serve refuses to start: DJANGO_DEBUG turns debug on" in output
    assert "Traceback" not in output


def test_the_makefile_target_refuses_debug_on() -> None:
    environment = production_environment(DJANGO_DEBUG="1")
    code, output = serve_expecting_refusal(["make", "--no-print-directory", "serve"], environment)
    assert code != 0
    assert "DJANGO_DEBUG turns debug on" in output


def secret_key_starting_with_a_dollar() -> str:
    """A key from Django's own generator that starts with `$` (1 in 50 of them do)."""
    while not (key := get_random_secret_key()).startswith("$"):
        pass
    return key


def test_secrets_starting_with_a_dollar_are_read_as_written() -> None:
    """django-environ reads `$NAME` as another variable's value: such a secret key was "not set"."""
    secret_key = secret_key_starting_with_a_dollar()
    signing_key = "$" + secrets.token_urlsafe(48)
    environment = production_environment(DJANGO_SECRET_KEY=secret_key, SPORTS_SANDBOX_SIGNING_KEY=signing_key)
    checked = subprocess.run(
        [sys.executable, "-m", "config.serve", "--check"],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    digest = "import hashlib; from django.conf import settings as s; "
    digest += "print(*(hashlib.sha256(v.encode()).hexdigest() for v in (s.SECRET_KEY, s.SPORTS_SANDBOX_SIGNING_KEY)))"
    shown = run_in(PROJECT_ROOT, [sys.executable, "manage.py", "shell", "-c", digest], environment)
    assert shown.split()[-2:] == [hashlib.sha256(key.encode()).hexdigest() for key in (secret_key, signing_key)]


@pytest.fixture(scope="module")
def production_node() -> Iterator[Cluster]:
    """One node of `make serve` with a correct production environment, DJANGO_DEBUG unset (make serve's
    default: debug off), PostgreSQL, Redis."""
    node = Cluster()
    del node.environment["DJANGO_DEBUG"]
    try:
        node.start(events_in=(False,))  # collectstatic first, as `make serve` does (Cluster.prepare)
        yield node
    finally:
        node.stop()


def test_with_a_correct_production_environment_it_serves(production_node: Cluster) -> None:
    assert "DJANGO_DEBUG" not in production_node.environment
    answer = httpx2.get(f"{production_node.urls[0]}/healthz", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    login = httpx2.get(f"{production_node.urls[0]}/accounts/login/", timeout=10)
    assert login.status_code == 200
    assert 'class="hint"' not in login.text  # production shows no login hint (a site app's, in development)


def test_with_debug_unset_it_serves_with_debug_off(production_node: Cluster) -> None:
    missing = httpx2.get(f"{production_node.urls[0]}/no-such-page/", timeout=10)
    assert missing.status_code == 404
    assert "URLconf" not in missing.text  # not Django's technical 404 page
    assert "config.urls" not in missing.text


# --- the socket server serves sockets -------------------------------------------------------------

SOCKET_ANSWERS_WITHIN_SECONDS = 5  # a bound, not a measurement: the 404 comes before any body is read
LARGE_BODY_BYTES = 200 * 1024 * 1024  # the 200 MiB, announced; a few KiB of it sent


def raw_request(address: str, request: bytes) -> bytes:
    """What the server at `address` answers to `request`, read until it closes or goes quiet."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=SOCKET_ANSWERS_WITHIN_SECONDS) as connection:
        connection.sendall(request)
        answer = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := connection.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and answer.startswith(b"HTTP/1.1 404"):
                    break
        return answer


def socket_server_address(node: Cluster) -> str:
    return node.ws_urls[0].removeprefix("ws://").removesuffix("/sdk/v1/ws")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/accounts/login/"),
        ("POST", "/accounts/login/"),
        ("GET", "/admin/login/"),
        ("POST", "/api/sports-token"),
        ("GET", "/healthz"),
        ("GET", "/sdk/v1/ws"),
    ],
)
def test_the_socket_server_answers_any_other_request_404(production_node: Cluster, method: str, path: str) -> None:
    request = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n".encode()
    answer = raw_request(socket_server_address(production_node), request)
    assert answer.startswith(b"HTTP/1.1 404"), answer[:200]
    assert b"csrfmiddlewaretoken" not in answer  # no login form
    assert b"Traceback" not in answer


def test_the_socket_server_answers_a_large_body_404_without_reading_it(production_node: Cluster) -> None:
    head = f"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {LARGE_BODY_BYTES}\r\n"
    head += "Content-Type: application/x-www-form-urlencoded\r\n\r\n"
    started = time.monotonic()
    answer = raw_request(socket_server_address(production_node), head.encode() + b"x" * 4096)
    assert answer.startswith(b"HTTP/1.1 404"), answer[:200]
    assert time.monotonic() - started < SOCKET_ANSWERS_WITHIN_SECONDS


def test_the_socket_server_still_serves_the_socket(production_node: Cluster) -> None:
    answer = asyncio.run(
        first_answer(production_node.ws_urls[0], json.dumps(envelope("auth", {"apiKey": production_node.site_key})))
    )
    assert isinstance(answer, dict), answer
    assert "result" in answer, answer


async def handshake_status(url: str) -> int | None:
    """The HTTP status a WebSocket handshake at `url` is refused with; None when it is accepted."""
    try:
        async with connect(url, open_timeout=SOCKET_ANSWERS_WITHIN_SECONDS):
            return None
    except InvalidStatus as refused:
        return refused.response.status_code


def test_a_websocket_handshake_at_another_path_is_refused(production_node: Cluster) -> None:
    other = production_node.ws_urls[0].replace("/sdk/v1/ws", "/admin/")
    assert asyncio.run(handshake_status(other)) in (403, 404)


async def first_answer(url: str, frame: str) -> dict[str, object] | int | None:
    """The socket's answer to `frame`, or the close code it was refused with (None: no close frame)."""
    async with connect(url, max_size=None) as socket:
        try:
            await socket.send(frame)  # a big one is refused while it is still being sent
            answer: dict[str, object] = json.loads(await asyncio.wait_for(socket.recv(), 10))
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else None
        return answer


def padded_auth(key: str, size: int) -> str:
    frame = json.dumps(envelope("auth", {"apiKey": key}))
    return frame[:-1] + " " * (size - len(frame)) + "}"


def test_a_frame_over_65536_bytes_is_closed_with_1009_before_auth(production_node: Cluster) -> None:
    url = production_node.ws_urls[0]
    at_the_cap = padded_auth(production_node.site_key, MAX_FRAME_BYTES)
    over_the_cap = padded_auth(production_node.site_key, MAX_FRAME_BYTES + 1)
    assert len(at_the_cap.encode()) == MAX_FRAME_BYTES

    accepted = asyncio.run(first_answer(url, at_the_cap))
    assert isinstance(accepted, dict), accepted
    assert "result" in accepted, accepted  # read, parsed and authenticated
    assert asyncio.run(first_answer(url, over_the_cap)) == 1009
    assert asyncio.run(first_answer(url, "x" * (16 * 1024 * 1024))) == 1009  # the 16 MiB frame


# --- an operator's metrics folder is the site's own ------------------------------------------------

NOBODY = pwd.getpwnam("nobody").pw_uid
FORGED = 'sports_token_requests_total{outcome="upstream_unauthorized"}'


def metrics_file(path: Path, values: dict[str, float]) -> None:
    """A file in prometheus_client's own format, counting `values` (outcome: count) as a worker would."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    written = MmapedDict(str(path))  # type: ignore[no-untyped-call]
    help_text = "Answers of POST /api/sports-token, by outcome."
    for outcome, value in values.items():
        key = mmap_key("sports_token_requests", "sports_token_requests_total", ["outcome"], [outcome], help_text)
        written.write_value(key, value, 0.0)  # type: ignore[no-untyped-call]
    written.close()  # type: ignore[no-untyped-call]


def world_writable(folder: Path) -> str:
    folder.chmod(0o777)
    return f"The metrics folder {folder} is open to other users (mode 0777). Run `chmod go-w {folder}`"


def anothers_folder(folder: Path) -> str:
    os.chown(folder, NOBODY, NOBODY)
    folder.chmod(0o755)
    return f"The metrics folder {folder} belongs to another user (uid {NOBODY})"


def a_planted_count(folder: Path) -> str:
    """Another user's file: a billion unauthorized answers, and 20,000 made-up labels."""
    planted = folder / "counter_1.db"
    metrics_file(planted, {"upstream_unauthorized": 1e9, **{f"label{n}": 1 for n in range(20_000)}})
    os.chown(planted, NOBODY, NOBODY)
    return f"{planted} in the metrics folder belongs to another user (uid {NOBODY}), who could have planted it"


def a_link_to_another_file(folder: Path) -> str:
    """A link where a new worker's file would be: the worker would write through it."""
    target = folder.parent / "not-the-sites.txt"
    target.write_text("the worker must not write here")
    (folder / "counter_2.db").symlink_to(target)
    return f"{folder / 'counter_2.db'} in the metrics folder is a symbolic link"


def a_file_others_can_write(folder: Path) -> str:
    written = folder / "counter_3.db"
    metrics_file(written, {"minted": 1})
    written.chmod(0o666)
    return f"{written} in the metrics folder is writable by other users (mode 0666)"


@pytest.mark.parametrize(
    "spoil", [world_writable, anothers_folder, a_planted_count, a_link_to_another_file, a_file_others_can_write]
)
@pytest.mark.parametrize("entry", ["start", "check"])
def test_make_serve_refuses_a_metrics_folder_that_is_not_the_sites_own(
    tmp_path: Path, spoil: Callable[[Path], str], entry: str
) -> None:
    folder = tmp_path / "multiproc"
    folder.mkdir(mode=0o700)
    sentence = spoil(folder)
    environment = production_environment(SPORTS_METRICS="1", PROMETHEUS_MULTIPROC_DIR=str(folder))
    command = [sys.executable, "-m", "config.serve", *(["--check"] if entry == "check" else [])]
    code, output = serve_expecting_refusal(command, environment)
    assert code != 0
    (refusal,) = [line for line in output.splitlines() if line.startswith("make serve refuses to start:")]
    assert refusal.startswith(f"make serve refuses to start: {sentence}")  # one line, naming the entry
    assert "PROMETHEUS_MULTIPROC_DIR" in refusal  # what to change, if not the entry
    assert "Traceback" not in output


def test_the_makefile_target_refuses_a_world_writable_metrics_folder(tmp_path: Path) -> None:
    folder = tmp_path / "multiproc"
    folder.mkdir()
    sentence = world_writable(folder)
    environment = production_environment(SPORTS_METRICS="1", PROMETHEUS_MULTIPROC_DIR=str(folder))
    code, output = serve_expecting_refusal(["make", "--no-print-directory", "serve"], environment)
    assert code != 0
    assert f"make serve refuses to start: {sentence}" in output


@dataclass
class Metered:
    """A node of make serve with metrics on, 2 workers, in the operator's metrics folder; its output in `log`."""

    node: Cluster
    folder: Path
    log: Path


@pytest.fixture(scope="module")
def metered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Metered]:
    folder = tmp_path_factory.mktemp("operator") / "multiproc"
    folder.mkdir(mode=0o700)
    metrics_file(folder / "counter_4.db", {"minted": 5})  # the last run's: emptied at the start
    log = tmp_path_factory.mktemp("metered") / "serve.log"
    node = Cluster(
        SPORTS_METRICS="1",
        PROMETHEUS_MULTIPROC_DIR=str(folder),
        SPORTS_SANDBOX="0",
        SPORTS_BASE_URL="http://127.0.0.1:9",  # never asked: the answers counted here are 401s
        SPORTS_API_KEY="sk_test_" + secrets.token_urlsafe(32),
    )
    node.prepare()
    port = free_port()
    environment = {**node.environment, "HOST": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "2"}
    with log.open("wb") as output:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "config.serve"], cwd=PROJECT_ROOT, env=environment, stdout=output, stderr=output
        )
    node.processes.append(launcher)
    node.urls.append(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 30
        while not healthy(node.urls[0]):
            assert launcher.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield Metered(node, folder, log)
    finally:
        node.stop()


def healthy(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx2.TransportError:
        return False


def test_a_file_in_the_metrics_folder_that_is_not_a_metrics_file_never_makes_a_scrape_500(metered: Metered) -> None:
    from tests.production.test_operating import anonymous_mint, counts

    anonymous_mint(metered.node.urls[0])
    before = counts(metered.node.urls[0])
    assert "minted" not in before  # the last run's file went at the start
    empty = metered.folder / "counter_5.db"
    empty.write_bytes(b"")  # prometheus_client's own reading of it: struct.error, every scrape a 500
    for _ in range(8):  # both workers, several times each
        assert counts(metered.node.urls[0]) == before  # 200 (counts() asserts it), with the same counts
    said = [line for line in metered.log.read_text().splitlines() if str(empty) in line]
    assert 1 <= len(said) <= 2, said  # once per worker process, whatever the number of scrapes
    assert "Skipped" in said[0]
    empty.unlink()


def test_restarted_workers_leave_their_counts_and_no_files_behind(metered: Metered) -> None:
    from tests.production.test_operating import anonymous_mint, counts, gunicorn_workers

    url = metered.node.urls[0]
    sent = counts(url).get("not_authenticated", 0)
    for _ in range(5):
        workers = gunicorn_workers(metered.node)
        while not workers <= counting_workers(metered.folder):  # until each worker has counted some
            anonymous_mint(url)
            sent += 1
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while victim in (now := gunicorn_workers(metered.node)) or len(now) < 2:
            assert time.monotonic() < deadline, "gunicorn did not replace the killed worker"
            time.sleep(0.2)
        assert counts(url)["not_authenticated"] == sent  # the dead worker's counts stay
        assert not list(metered.folder.glob(f"*_{victim}.db"))  # and its files go
    # The live workers' files, one archive per type and the lock: however many workers died.
    files = sorted(path.name for path in metered.folder.iterdir())
    assert len(files) <= 2 * 2 + 3 + 1, files
    assert "counter_archive.db" in files


def counting_workers(folder: Path) -> set[int]:
    """The pids with a counter file in `folder` (the archive is nobody's)."""
    return {int(pid) for path in folder.glob("counter_*.db") if (pid := path.stem.rpartition("_")[2]).isdigit()}


# --- SIGTERM to make serve drains, then stops everything it started ------------------------------------------

DRAIN_SECONDS = 2  # WEB_DRAIN_SECONDS here: long enough to see the drain, short enough for the gate


def members_of(group: int) -> set[int]:
    """The processes of process group `group` that have not exited (zombies excluded)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # The fields after the command's name (in parentheses, which may hold spaces): state, ppid, pgrp.
            state, _, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
            if int(pgrp) == group and state != "Z":
                found.add(int(stat.parent.name))
    return found


def readyz(url: str) -> httpx2.Response | None:
    try:
        return httpx2.get(f"{url}/readyz", timeout=5)
    except httpx2.TransportError:
        return None


def test_sigterm_to_make_serve_drains_then_stops_every_server_it_started(tmp_path: Path) -> None:
    """What a container runtime sends its first process, or systemd its main one: make passes it on to
    config.serve (its last step execs), whose gunicorn answers /readyz 503 "stopping" at once while it
    still serves for WEB_DRAIN_SECONDS; then every server exits, and make with them."""
    node = Cluster(WEB_DRAIN_SECONDS=str(DRAIN_SECONDS))
    node.prepare()  # the migrated database and collected files: make serve's migrate and collectstatic find them
    url = f"http://127.0.0.1:{free_port()}"
    environment = {
        **node.environment,
        "SPORTS_API_KEY": "sk_test_" + secrets.token_urlsafe(32),  # never asked here
        "HOST": url.removeprefix("http://"),
        "SPORTS_SANDBOX_WS_HOST": f"127.0.0.1:{free_port()}",  # the socket server too
        "WEB_CONCURRENCY": "2",
    }
    log = tmp_path / "make-serve.log"
    with log.open("wb") as output:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "serve"],  # noqa: S607
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a group of its own: what it leaves behind is found by its group
        )
    try:
        deadline = time.monotonic() + 120  # check, migrate, collectstatic, check again, then the servers
        while not healthy(url):
            assert make.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        started = members_of(make.pid)
        assert len(started) >= 6, started  # make, config.serve, gunicorn and its 2 workers, uvicorn, ...

        make.send_signal(signal.SIGTERM)  # to make alone, not its group
        deadline = time.monotonic() + DRAIN_SECONDS
        # A request the worker read just before its SIGTERM may be answered 503 on a kept connection (gunicorn
        # decides a connection's fate when it reads the request); every request read during the drain closes its own.
        while (answer := readyz(url)) is None or answer.status_code == 200 or answer.headers["Connection"] != "close":
            assert time.monotonic() < deadline, f"no 503 closing its connection within the drain:\n{log.read_text()}"
            time.sleep(0.05)
        assert answer.status_code == 503, answer.text
        assert answer.json()["ready"] is False
        assert answer.json()["stopping"] is True
        assert int(answer.headers["Retry-After"]) > 0
        served = httpx2.get(f"{url}/accounts/login/", timeout=10)  # still serving: the drain
        assert served.status_code == 200
        assert served.headers["Connection"] == "close"

        assert make.wait(timeout=DRAIN_SECONDS + 30) == -signal.SIGTERM, log.read_text()
        assert members_of(make.pid) == set(), log.read_text()  # config.serve, gunicorn, uvicorn: all gone
        with pytest.raises(httpx2.ConnectError):
            httpx2.get(f"{url}/healthz", timeout=5)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGKILL)
        make.wait(timeout=10)
        node.stop()
