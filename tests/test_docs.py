"""The docs stand alone: every path they link to or cite exists in the repository, and no committed file
points at files a user of the repository does not have (follow-a-mint.md's functions: tests/test_follow_a_mint.py).
They describe what is: no page tells how it came to be (CHANGELOG.md does)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FENCED_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
# A cited repository path: folders and a name, optionally a pytest node id after `::`.
CITED_PATH = re.compile(r"^(?P<path>[\w.-]+(?:/[\w.-]+)*/?)(?:::\w+)?$")
TOP_LEVEL = {"mintroute", "sportsproxy", "config", "tests", "docs", "static", "templates"}
FILE_SUFFIXES = {".py", ".md", ".js", ".mjs", ".ts", ".json", ".html", ".css", ".toml", ".txt", ".png"}
DOCS_PAGE = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.md)\b")
# Built from pieces so that this file does not match itself.
OUTSIDE_REFERENCES = re.compile(
    "|".join([re.escape("/" + "work/"), re.escape("CONTRACT" + ".md"), r"(?<![\w.-])(?:seed|shared)" + "/"])
)


def markdown_files() -> list[Path]:
    """The repository's own Markdown: the README, docs/, and the browser client's README if present."""
    client_readme = ROOT / "mintroute" / "static" / "sports" / "README.md"
    candidates = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), client_readme]
    return [path for path in candidates if path.is_file()]


def prose(path: Path) -> str:
    """The Markdown without its fenced code blocks (examples, not references)."""
    return FENCED_BLOCK.sub("", path.read_text())


def broken_links(path: Path, text: str) -> list[str]:
    """Relative links (and their #anchors) in `text`, a Markdown file at `path`, that lead nowhere."""
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists() or (
            anchor and destination.suffix == ".md" and anchor not in heading_anchors(destination)
        ):
            broken.append(target)
    return broken


def heading_anchors(path: Path) -> set[str]:
    """The `#anchor` of each heading, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", prose(path), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def cited_paths(text: str) -> list[str]:
    """Backticked repository paths in `text`: `mintroute/views.py`, `tests/x.py::test_y`, `docs/`."""
    cited = []
    for code in INLINE_CODE.findall(text):
        match = CITED_PATH.match(code)
        if match is None or "/" not in code or "..." in code:
            continue
        path = match["path"]
        if path.split("/")[0] in TOP_LEVEL or Path(path).suffix in FILE_SUFFIXES:
            cited.append(path)
    return cited


def missing_paths(text: str) -> list[str]:
    return [path for path in cited_paths(text) if not (ROOT / path).exists()]


def committed_text_files() -> list[Path]:
    git = shutil.which("git")
    assert git is not None, "git is needed to list the committed files"
    listed = subprocess.run(  # noqa: S603 - git, fixed arguments
        [git, "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = []
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        try:
            path.read_text()
        except (UnicodeDecodeError, FileNotFoundError):  # binary (screenshots), or deleted but not committed
            continue
        files.append(path)
    return files


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_or_heading_of_the_repository(path: Path) -> None:
    assert broken_links(path, prose(path)) == []


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_backticked_repository_path_exists(path: Path) -> None:
    assert missing_paths(prose(path)) == []


def test_the_checks_read_the_docs() -> None:
    """The patterns still find what they look for, so the two tests above cannot pass by reading nothing."""
    texts = {path: prose(path) for path in markdown_files()}
    assert len(markdown_files()) >= 8
    assert sum(len(LINK.findall(text)) for text in texts.values()) > 40
    assert sum(len(cited_paths(text)) for text in texts.values()) > 300


def test_a_broken_link_or_path_is_reported() -> None:
    page = ROOT / "docs" / "service.md"
    text = (
        "See [settings](settings.md), [nothing](nowhere.md), [a bad anchor](settings.md#no-such-heading), "
        "[a missing page's anchor](gone.md#x), [the web](https://example.com) and "
        "`mintroute/views.py`, `mintroute/gone.py`, "
        "`tests/test_docs.py::test_x`, `10/m`, `application/json`, `lib/missing.js`."
    )
    assert broken_links(page, text) == ["nowhere.md", "settings.md#no-such-heading", "gone.md#x"]
    assert missing_paths(text) == ["mintroute/gone.py", "lib/missing.js"]


def test_no_committed_file_refers_to_files_outside_the_repository() -> None:
    files = committed_text_files()
    assert ROOT / "docs" / "service.md" in files  # the listing works
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if OUTSIDE_REFERENCES.search(line)
    ]
    assert offenders == []


def test_every_docs_page_a_committed_file_names_exists() -> None:
    """Code comments and docstrings point readers at docs pages too (`docs/service.md`)."""
    named = {
        (path.relative_to(ROOT), page)
        for path in committed_text_files()
        for page in DOCS_PAGE.findall(path.read_text())
    }
    assert len(named) > 20  # the pattern still reads the files
    assert sorted(f"{path}: {page}" for path, page in named if not (ROOT / page).is_file()) == []


def test_an_outside_reference_is_recognised() -> None:
    for line in ["see /" + "work/x", "`CONTRACT" + ".md`", "the seed (seed" + "/000.txt)", "../shared" + "/x"]:
        assert OUTSIDE_REFERENCES.search(line), line
    for line in ["sportsproxy/django/shared.py", "a seeded random generator", "the shared client"]:
        assert not OUTSIDE_REFERENCES.search(line), line


# --- the browser client's module lists: its entry file's header and browser-client.md's table ------

CLIENT = ROOT / "mintroute" / "static" / "sports"
HEADER_ENTRY = re.compile(r"^ \*     ([\w-]+\.js) ", re.MULTILINE)
TABLE_ENTRY = re.compile(r"^\| `([\w-]+\.js)` \|", re.MULTILINE)


def client_modules() -> set[str]:
    return {path.name for path in CLIENT.glob("*.js")}


def test_the_entry_files_header_lists_every_module_of_the_folder() -> None:
    header = (CLIENT / "sports-client.js").read_text().split("*/", 1)[0]
    assert len(client_modules()) >= 10  # the glob still finds them
    assert sorted(HEADER_ENTRY.findall(header)) == sorted(client_modules())


def test_browser_client_md_lists_every_module_of_the_folder() -> None:
    page = (ROOT / "docs" / "browser-client.md").read_text()
    assert sorted(TABLE_ENTRY.findall(page)) == sorted(client_modules())


# --- the docs describe what is; history is CHANGELOG.md's -----------------------------------------

# How a page could tell how it came to be: an issue or pull request by number, a "wave" of work, the
# specification it was built to, a numbered pass of work, or a before / now table of earlier versions.
HISTORY = re.compile(
    r"\b(?:issues?|pull requests?|PRs?) #?\d+\b"
    r"|(?<![\w&/#])#\d+\b"
    r"|\bwaves?\b"
    r"|\bcontract\b"
    r"|\b(?:first|second|third|fourth|fifth|sixth|seventh|last|next) pass\b"
    r"|^\|\s*(?:finding\s*\|\s*)?before\s*\|\s*now\s*\|",
    re.IGNORECASE | re.MULTILINE,
)


def pages_that_describe() -> list[Path]:
    """Every page of prose but CHANGELOG.md, which is the history: docs/, the READMEs, the product's README."""
    return [*markdown_files(), *[path for path in [ROOT / "README.md.jinja"] if path.is_file()]]


@pytest.mark.parametrize("path", pages_that_describe(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_page_tells_how_it_came_to_be(path: Path) -> None:
    found = [
        f"{number}: {match.group(0)!r}"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in HISTORY.finditer(line)
    ]
    assert found == [], "history belongs in CHANGELOG.md and git, not in the page"


def test_history_is_recognised() -> None:
    for line in [
        "as issue 27 found",
        "(issue #35)",
        "see #12",
        "the fourth wave",
        "Waves of work",
        "the contract's row",
        "The third pass: CPU",
        "| finding | before | now | test |",
        "| before | now |",
    ]:
        assert HISTORY.search(line), line
    for line in [
        "`tests/test_x.py::test_the_default_classes_follow_the_contract_table`",
        "a request passes every rule",
        "[the pairs](docs/contributing.md#supported-versions)",
        "&#8594;",
        "| R13 | The tiers |",
        "tokens minted before revocation keep working; from now on",
    ]:
        assert not HISTORY.search(line), line


def test_the_changelog_keeps_the_history() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert changelog.startswith("# Changelog\n")
    assert "## [Unreleased]" in changelog
    assert re.search(r"^### (?:Added|Changed|Deprecated|Removed|Fixed|Security)$", changelog, flags=re.MULTILINE)
