"""What importing each part brings along, checked in a clean interpreter outside this repository.

The folders are copied into a temporary directory (the sandbox included, so that it could be
imported by mistake) and run with this project's interpreter, where websockets, PyJWT and Channels
are installed: the rules hold because nothing imports them, not because they are missing.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.standalone.foreign_site import PROJECT_ROOT, run

FORBIDDEN_FOR_THE_ROUTE = ("websockets", "jwt", "channels", "sportsproxy.sandbox")

SDK_CORE = """
import json, sys
import sportsproxy
from sportsproxy import AsyncSportsClient, SportsClient
SportsClient("sk_test_" + "k" * 43, base_url="https://sports.example").close()
AsyncSportsClient("sk_test_" + "k" * 43, base_url="https://sports.example")
print(json.dumps(sorted(sys.modules)))
"""

ROUTE = """
import json, sys
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "mintroute"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    ROOT_URLCONF="mintroute.urls",
    SPORTS_API_KEY="sk_test_" + "k" * 43,
    SPORTS_BASE_URL="https://sports.example",
)
django.setup()
from django.core.management import call_command
from django.urls import resolve
import mintroute.views, sportsproxy.django.shared
call_command("check")
resolve("/api/sports-token")
sportsproxy.django.shared.get_client()
print(json.dumps(sorted(sys.modules)))
"""

# The embedded sandbox answering in-process (SPORTS_TRANSPORT = "sandbox"), as `runserver` and the
# tests use it: its JSON-RPC side, accounts and matches, but nothing of its socket side.
IN_PROCESS_SANDBOX = """
import json, sys
import django
from django.conf import settings
KEY = "sk_test_" + "k" * 43
settings.configure(
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "sportsproxy.sandbox"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    SPORTS_API_KEY=KEY,
    SPORTS_TRANSPORT="sandbox",
    SPORTS_SANDBOX_SIGNING_KEY="s" * 48,
)
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
import sportsproxy.django.shared
from sportsproxy.sandbox.accounts.keys import register_key
from sportsproxy.sandbox.models import Account
register_key(Account.objects.create(name="rules"), KEY)
client = sportsproxy.django.shared.get_client()
assert client.tokens.create().token
assert len(client.matches.list(limit=1).data) == 1
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parts")
    for folder in ("mintroute", "sportsproxy"):
        shutil.copytree(PROJECT_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def modules_loaded_by(code: str, parts: Path) -> set[str]:
    output = run([sys.executable, "-c", code], cwd=parts)
    return set(json.loads(output.strip().splitlines()[-1]))


def loaded(modules: set[str], package: str) -> bool:
    return any(name == package or name.startswith(f"{package}.") for name in modules)


def test_the_sdk_core_imports_nothing_of_django_the_sandbox_or_websockets(parts: Path) -> None:
    modules = modules_loaded_by(SDK_CORE, parts)
    assert loaded(modules, "sportsproxy.client")
    for package in ("django", "websockets", "jwt", "channels", "sportsproxy.sandbox", "sportsproxy.django"):
        assert not loaded(modules, package), package


def test_the_mint_route_and_the_glue_import_no_websockets_jwt_channels_or_sandbox(parts: Path) -> None:
    modules = modules_loaded_by(ROUTE, parts)
    assert loaded(modules, "mintroute.views")
    assert loaded(modules, "sportsproxy.django.checks")
    for package in FORBIDDEN_FOR_THE_ROUTE:
        assert not loaded(modules, package), package


def test_the_sdk_socket_is_loaded_on_first_use(parts: Path) -> None:
    modules = modules_loaded_by(
        "import json, sys, sportsproxy\nsportsproxy.SportsSocket\nprint(json.dumps(sorted(sys.modules)))", parts
    )
    assert loaded(modules, "websockets")


def test_the_in_process_sandbox_loads_nothing_of_its_socket_side(parts: Path) -> None:
    modules = modules_loaded_by(IN_PROCESS_SANDBOX, parts)
    for part in ("rpc", "accounts", "matches"):
        assert loaded(modules, f"sportsproxy.sandbox.{part}"), part
    for package in ("sportsproxy.sandbox.realtime", "channels", "websockets"):
        assert not loaded(modules, package), package
