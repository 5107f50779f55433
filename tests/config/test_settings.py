"""config/settings.py read in a process of its own, as a deployed site reads it: what a site with the
sandbox not mounted installs, migrates and serves, and where its page's browser client calls."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from config.service_addresses import browser_addresses, origin, websocket_url

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "settings-pass-123"
SERVICE = "https://api.sports.example:8443"  # never called: the pages below only render
SANDBOX_TABLE_PREFIX = "sandbox_"


def site_environment(database: Path, **overrides: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_ENV_FILE": "",
        "DJANGO_DEBUG": "1",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DATABASE_URL": f"sqlite:///{database}",
        "SPORTS_SANDBOX": "",
        "SPORTS_BASE_URL": "",
        "SPORTS_API_KEY": "",
        "SPORTS_PUBLIC_BASE_URL": "",
        "SPORTS_PUBLIC_WS_URL": "",
        **overrides,
    }


def manage(environment: dict[str, str], *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(  # noqa: S603 - this interpreter and the project's manage.py
        [sys.executable, "manage.py", *arguments],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert not check or completed.returncode == 0, completed.stdout + completed.stderr
    return completed


# Logged in as a superuser through the login form: the admin's index, a sandbox admin page, and the page.
BROWSE = f"""
import json
from django.contrib.auth import get_user_model
from django.test import Client
get_user_model().objects.create_superuser("owner", password="{PASSWORD}")
browser = Client()
assert browser.post("/accounts/login/", {{"username": "owner", "password": "{PASSWORD}"}}).status_code == 302
index = browser.get("/admin/")
page = browser.get("/")
print(json.dumps({{
    "admin": index.status_code,
    "admin_text": index.content.decode(),
    "sandbox_keys_page": browser.get("/admin/sandbox/apikey/").status_code,
    "page": page.status_code,
    "page_text": page.content.decode(),
    "csp": page.headers.get("Content-Security-Policy", ""),
}}))
"""


def browse(environment: dict[str, str]) -> dict[str, object]:
    answer: dict[str, object] = json.loads(manage(environment, "shell", "-c", BROWSE).stdout.splitlines()[-1])
    return answer


def client_config(page_text: str) -> dict[str, object]:
    start = page_text.index('<script id="client-config" type="application/json">') + len(
        '<script id="client-config" type="application/json">'
    )
    config: dict[str, object] = json.loads(page_text[start : page_text.index("</script>", start)])
    return config


def tables(database: Path) -> set[str]:
    with sqlite3.connect(database) as connection:
        return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.fixture(scope="module")
def unmounted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path, dict[str, object]]:
    """A site against a service elsewhere (so the sandbox is off), migrated on a fresh database, and what
    its admin and its page showed a logged-in superuser."""
    database = tmp_path_factory.mktemp("unmounted") / "site.sqlite3"
    environment = site_environment(database, SPORTS_BASE_URL=SERVICE, SPORTS_API_KEY="sk_test_" + "k" * 40)
    manage(environment, "migrate", "--no-input")
    return environment, database, browse(environment)


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path, dict[str, object]]:
    """The same with the sandbox mounted (the embedded defaults)."""
    database = tmp_path_factory.mktemp("mounted") / "site.sqlite3"
    environment = site_environment(database, SPORTS_SANDBOX="1")
    manage(environment, "migrate", "--no-input")
    return environment, database, browse(environment)


def test_a_site_that_does_not_mount_the_sandbox_has_none_of_its_tables_admin_pages_or_commands(
    unmounted: tuple[dict[str, str], Path, dict[str, object]],
) -> None:
    environment, database, seen = unmounted
    assert "auth_user" in tables(database)
    assert not [table for table in tables(database) if table.startswith(SANDBOX_TABLE_PREFIX)]
    assert seen["admin"] == 200
    assert "Sandbox" not in str(seen["admin_text"])
    assert "API keys" not in str(seen["admin_text"])
    assert seen["sandbox_keys_page"] == 404
    refused = manage(environment, "sandbox_key", "create", "--account", "x", check=False)
    assert refused.returncode != 0
    assert "Unknown command: 'sandbox_key'" in refused.stderr


def test_a_site_that_mounts_the_sandbox_keeps_its_tables_admin_pages_and_command(
    mounted: tuple[dict[str, str], Path, dict[str, object]],
) -> None:
    """The other side of the test above: the same checks see the sandbox where it is mounted."""
    environment, database, seen = mounted
    assert {"sandbox_account", "sandbox_apikey"} <= tables(database)
    assert "API keys" in str(seen["admin_text"])
    assert seen["sandbox_keys_page"] == 200
    assert manage(environment, "sandbox_key", "create", "--account", "mounted").stdout.strip()


def test_without_the_sandbox_the_page_calls_the_service_at_sports_base_urls_origin(
    unmounted: tuple[dict[str, str], Path, dict[str, object]],
) -> None:
    seen = unmounted[2]
    assert seen["page"] == 200
    config = client_config(str(seen["page_text"]))
    assert config["baseUrl"] == SERVICE
    assert config["wsUrl"] == "wss://api.sports.example:8443/sdk/v1/ws"
    connect_src = next(part for part in str(seen["csp"]).split("; ") if part.startswith("connect-src"))
    assert SERVICE in connect_src.split()
    assert "wss://api.sports.example:8443" in connect_src.split()


def test_with_the_sandbox_mounted_the_page_calls_its_own_origin(
    mounted: tuple[dict[str, str], Path, dict[str, object]],
) -> None:
    config = client_config(str(mounted[2]["page_text"]))
    assert (config["baseUrl"], config["wsUrl"]) == (None, None)  # the client's default: the page's origin


def test_the_public_addresses_set_win_over_the_default() -> None:
    chosen = {"public_base_url": "https://edge.example", "public_ws_url": "wss://socket.example/sdk/v1/ws"}
    for mounted in (True, False):
        assert browser_addresses(**chosen, base_url=SERVICE, sandbox_mounted=mounted) == (
            "https://edge.example",
            "wss://socket.example/sdk/v1/ws",
        )


def test_a_public_base_set_alone_gives_the_socket_at_its_origin() -> None:
    assert browser_addresses(
        public_base_url="https://edge.example", public_ws_url="", base_url=SERVICE, sandbox_mounted=False
    ) == ("https://edge.example", "wss://edge.example/sdk/v1/ws")


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:9000", ("http://127.0.0.1:9000", "ws://127.0.0.1:9000/sdk/v1/ws")),
        ("https://api.example.com/", ("https://api.example.com", "wss://api.example.com/sdk/v1/ws")),
        ("", ("", "")),
    ],
)
def test_the_default_follows_the_scheme_of_sports_base_url(base_url: str, expected: tuple[str, str]) -> None:
    assert browser_addresses(public_base_url="", public_ws_url="", base_url=base_url, sandbox_mounted=False) == expected


def test_origin_and_websocket_url_refuse_what_is_not_an_address() -> None:
    assert origin("not a url") == ""
    assert websocket_url("ftp://example.com") == ""
