"""The README is the front page: at most 200 lines, one picture of the flow (a Mermaid sequence
diagram), the existing-site steps in one block, and a link to every page of docs/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 200
MERMAID = re.compile(r"^```mermaid\n(?P<diagram>.*?)^```$", re.MULTILINE | re.DOTALL)
DOCS_LINK = re.compile(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]+)?\)")


def linked_docs(text: str) -> set[str]:
    """The docs pages `text` links to, by file name."""
    return set(DOCS_LINK.findall(text))


def test_the_readme_fits_a_page() -> None:
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_the_readme_draws_the_flow_as_a_sequence_diagram() -> None:
    (diagram,) = [match["diagram"] for match in MERMAID.finditer(README.read_text())]
    assert diagram.startswith("sequenceDiagram\n")
    participants = re.findall(r"^\s*participant \w+ as (.+)$", diagram, re.MULTILINE)
    assert [name.split(" ")[0] for name in participants] == ["Browser", "Mint", "Service", "Socket"]


def test_the_readme_links_every_docs_page() -> None:
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert len(pages) >= 10  # the glob still finds them
    assert sorted(pages - linked_docs(README.read_text())) == []


def test_the_existing_site_steps_are_one_block() -> None:
    text = README.read_text()
    assert text.count("<!-- existing-site -->") == text.count("<!-- /existing-site -->") == 1
    block = text.split("<!-- existing-site -->")[1].split("<!-- /existing-site -->")[0]
    assert block.count("<!-- wiring: ") == 2  # settings.py and urls.py, read by tests/standalone/


def test_an_unlinked_page_is_noticed() -> None:
    text = "[a](docs/settings.md), [b](docs/deploy.md#https), [c](docs/screenshots/x.png), docs/testing.md"
    assert linked_docs(text) == {"settings.md", "deploy.md"}


def test_make_screenshots_remakes_every_picture_the_readme_shows() -> None:
    """`make screenshots` runs the browser test that takes the pictures with its folder set to the README's."""
    shown = set(re.findall(r"!\[[^\]]*\]\((docs/screenshots/[\w.-]+\.png)\)", README.read_text()))
    assert shown == {"docs/screenshots/demo-desktop.png", "docs/screenshots/demo-phone.png"}
    recipe = subprocess.run(
        ["make", "-n", "-o", "install-dev", "screenshots"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert "DEMO_SCREENSHOT_DIR=docs/screenshots " in recipe
    assert "tests/e2e/test_demo_page.py -k screenshots" in recipe
    taker = (ROOT / "tests" / "e2e" / "test_demo_page.py").read_text()
    assert 'f"demo-{name}.png"' in taker
    assert {f"docs/screenshots/demo-{name}.png" for name in ("desktop", "phone")} == shown
