"""The mint route's table of answers is written once, in docs/mint-route.md ("Answers"), and holds
the code's refusals: every `RouteError(status, code, ...)` that `mintroute/` can raise is a row of
the table, and every row is one the code can raise.

The refusals are read from the source with `ast`: each `RouteError(...)` call's first two
arguments must be literals (a status, and a code or `a if ... else b` of two codes), so that no
refusal can hide from this test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "mint-route.md"
# A row of the table: `| 400 | `bad_request` | ...`.
ROW = re.compile(r"^\| (?P<status>\d{3}) \| `(?P<code>[a-z_]+)` \|", re.MULTILINE)

Answer = tuple[int, str]


class UnreadableRefusal(Exception):
    """A `RouteError(...)` whose status or code is not a literal."""


def documented_answers(page: str) -> set[Answer]:
    """The (status, code) rows of the page's "Answers" table."""
    section = page.split("\n## Answers\n", 1)[1].split("\n## ", 1)[0]
    return {(int(row["status"]), row["code"]) for row in ROW.finditer(section)}


def codes_of(node: ast.expr, where: str) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return codes_of(node.body, where) | codes_of(node.orelse, where)
    raise UnreadableRefusal(f"{where}: RouteError's code is not a literal, so this test cannot read it")


def raised_answers(source: str, name: str) -> set[Answer]:
    """The (status, code) of every `RouteError(...)` call in `source`, a module named `name`."""
    answers: set[Answer] = set()
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "RouteError"):
            continue
        where = f"{name}:{node.lineno}"
        status = node.args[0] if node.args else None
        if not (isinstance(status, ast.Constant) and isinstance(status.value, int)):
            raise UnreadableRefusal(f"{where}: RouteError's status is not a literal, so this test cannot read it")
        answers |= {(status.value, code) for code in codes_of(node.args[1], where)}
    return answers


def code_answers() -> set[Answer]:
    return {
        answer
        for path in sorted((ROOT / "mintroute").rglob("*.py"))
        for answer in raised_answers(path.read_text(), str(path.relative_to(ROOT)))
    }


def test_the_table_of_answers_is_the_codes_refusals() -> None:
    documented, raised = documented_answers(PAGE.read_text()), code_answers()
    assert len(raised) >= 10  # the walk still finds the calls
    assert sorted(raised - documented) == [], "refusals the code raises that docs/mint-route.md does not list"
    assert sorted(documented - raised) == [], "rows of docs/mint-route.md that no code raises"


def test_rows_calls_and_an_unreadable_code_are_read_as_they_stand() -> None:
    page = (
        "# x\n\n## Answers\n\n| Status | `error` |\n| --- | --- |\n"
        "| 400 | `bad_request` | a |\n| 418 | `teapot` | b |\n\n## Next\n\n| 500 | `later` | c |\n"
    )
    source = (
        "RouteError(400, 'bad_request', 'm')\n"
        "RouteError(502, 'upstream_unauthorized' if key else 'upstream_error', 'm')\n"
    )
    assert documented_answers(page) == {(400, "bad_request"), (418, "teapot")}
    assert raised_answers(source, "x.py") == {
        (400, "bad_request"),
        (502, "upstream_unauthorized"),
        (502, "upstream_error"),
    }
    with pytest.raises(UnreadableRefusal, match=r"x\.py:1"):
        raised_answers("RouteError(400, code, 'm')\n", "x.py")
