"""docs/spec-coverage.md maps each rule to its tests (and a page of the project's own parts, its own rules): every
test a page cites exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"`(tests/[\w/.-]+\.(?:py|mjs))(?:::(\w+))?`")  # node tests are cited by file


def functions_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_cited_test_exists() -> None:
    # Every page: a part that a project may not have (an app of the site) keeps its rows on its own page.
    pages = sorted((ROOT / "docs").glob("*.md"))
    citations = [citation for page in pages for citation in CITATION.findall(page.read_text())]
    assert len(citations) > 100  # the pattern still reads the document
    missing = []
    for file, name in citations:
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif name and name not in functions_in(path):
            missing.append(f"{file}::{name}")
    assert missing == []
