"""docs/spec-coverage.md (and the demo's page for its own rules) maps each rule to its tests: every test it
cites exists."""

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
    # The demo's rows are on its own page, and those of this repository's README on the page about generating
    # projects: a project generated without the demo has no demo.md, and none has starter.md.
    pages = [ROOT / "docs" / "spec-coverage.md", *(ROOT / "docs").glob("demo.md"), *(ROOT / "docs").glob("starter.md")]
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
