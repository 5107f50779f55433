"""docs/follow-a-mint.md's count is the list it gives, and the list is what one mint runs and imports.

The Python part is measured here the way the page says: a profiling hook over one first mint
through the route (over HTTP to a stand-in service), then the module-level imports of the files
that ran. The browser's files are held to the folder (each exists); their run is the node tests'.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from mintroute import conf
from tests.upstreams import fake_upstream, http_response

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "follow-a-mint.md"
LISTED = re.compile(r"^- `(?P<path>[^`]+)`: (?P<kind>runs|only imported)\b", re.MULTILINE)
HTTP_ROW = re.compile(
    r"^\| Over HTTP to the real service \(either entry\) \| (\d+) \| (\d+) \| \*\*(\d+)\*\* \|", re.MULTILINE
)
PACKAGES = ("config", "mintroute", "sportsproxy")


def listed() -> dict[str, str]:
    return {match["path"]: match["kind"] for match in LISTED.finditer(PAGE.read_text())}


def test_the_stated_count_is_the_lists_length_and_every_file_exists() -> None:
    files = listed()
    counts = HTTP_ROW.search(PAGE.read_text())
    assert counts is not None, "the count table's first row"
    run, imported, total = (int(number) for number in counts.groups())
    assert run == sum(kind == "runs" for kind in files.values())
    assert imported == sum(kind == "only imported" for kind in files.values())
    assert total == len(files) == run + imported
    assert [path for path in files if not (ROOT / path).is_file()] == []


def module_file(name: str) -> str | None:
    for candidate in (Path(*name.split(".")).with_suffix(".py"), Path(*name.split("."), "__init__.py")):
        if (ROOT / candidate).is_file():
            return str(candidate)
    return None


def imported_at_module_level(path: str) -> set[str]:
    """The repository files `path` imports at module level (`if` blocks, TYPE_CHECKING, included)."""
    tree = ast.parse((ROOT / path).read_text())
    nodes = [*tree.body, *(child for node in tree.body if isinstance(node, ast.If) for child in node.body)]
    found: set[str] = set()
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            file = module_file(name) if name.split(".")[0] in PACKAGES else None
            if file is not None and not file.endswith("__init__.py"):
                found.add(file)
    return found


@pytest.fixture
def upstream(settings: Any, api_key: str) -> Iterator[None]:
    """A stand-in service that answers tokens.create, as the real one would."""

    def answer(body: bytes) -> bytes:
        request_id = json.loads(body)["id"]
        result = {"token": "a.b.c", "expiresAt": "2026-03-14T15:19:26+00:00"}
        return http_response(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode())

    with fake_upstream(answer) as url:
        settings.SPORTS_API_KEY, settings.SPORTS_TRANSPORT, settings.SPORTS_BASE_URL = api_key, "http", url
        yield


def python_files_of_one_mint() -> set[str]:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(User.objects.create_user("alice"))
    browser.get("/accounts/login/")
    ran: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        code, back = frame.f_code, frame.f_back
        in_a_module_body = code.co_name == "<module>" or (
            back is not None and back.f_code.co_name == "<module>" and back.f_code.co_filename == code.co_filename
        )
        path = Path(code.co_filename)
        if event == "call" and not in_a_module_body and path.is_relative_to(ROOT):
            relative = path.relative_to(ROOT)
            if relative.parts[0] in PACKAGES:
                ran.add(str(relative))

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        response = browser.post(
            "/api/sports-token",
            '{"reason": "initial"}',
            content_type="application/json",
            HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value,
        )
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert response.status_code == 200, response.content
    return ran


def test_the_python_files_listed_are_those_one_mint_runs_and_imports(upstream: None) -> None:
    ran = python_files_of_one_mint()
    imported = {file for path in ran for file in imported_at_module_level(path)} - ran
    named_by_a_default = {module_file(path.rpartition(".")[0]) for path in conf.DEFAULT_AUTHENTICATION} - ran
    python = {path: kind for path, kind in listed().items() if path.endswith(".py")}
    assert {path for path, kind in python.items() if kind == "runs"} == ran
    assert {path for path, kind in python.items() if kind == "only imported"} == imported | named_by_a_default


# --- follow-a-mint.md: each row's functions are defined in its file --------------------------------

FOLLOW_ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<functions>[^|]+) \|", re.MULTILINE)


def python_definitions(path: Path) -> set[str]:
    """Every function and class of a module, plain and as `Class.method`."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.update({member.name, f"{node.name}.{member.name}"})
    return names


def defined_in_javascript(name: str, source: str) -> bool:
    """`function name(`, a method `name(` or `#name(`, or a property `name: (`."""
    bare = re.escape(name)
    definition = rf"function\s+{bare}\s*\(|^\s*(?:async\s+|static\s+)*{bare}\s*\([^)]*\)\s*\{{|\b{bare}:\s*\("
    return re.search(definition, source, re.MULTILINE) is not None


def undefined_functions(page: str) -> list[str]:
    missing = []
    for row in FOLLOW_ROW.finditer(page):
        path = ROOT / row["file"]
        names = re.findall(r"`([^`]+)`", row["functions"])
        if path.suffix == ".py":
            defined = python_definitions(path)
            missing += [f"{row['file']}: {name}" for name in names if name not in defined]
        else:
            source = path.read_text()
            missing += [f"{row['file']}: {name}" for name in names if not defined_in_javascript(name, source)]
    return missing


def test_follow_a_mint_names_functions_that_exist() -> None:
    page = PAGE.read_text()
    assert len(FOLLOW_ROW.findall(page)) > 40  # the pattern still reads the tables
    assert undefined_functions(page) == []


def test_a_function_that_is_not_there_is_reported() -> None:
    page = (
        "| `mintroute/minting.py` | `mint_upstream`, `mint_later` | … |\n"
        "| `mintroute/admission.py` | `TokenRequestParser.parse`, `TokenRequestParser.render` | … |\n"
        "| `mintroute/static/sports/token-keeper.js` | `current`, `#accept`, `#forget` | … |\n"
    )
    assert undefined_functions(page) == [
        "mintroute/minting.py: mint_later",
        "mintroute/admission.py: TokenRequestParser.render",
        "mintroute/static/sports/token-keeper.js: #forget",
    ]
