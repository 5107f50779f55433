"""The template's docs and README.md.jinja as a product without the demo gets them: they name neither the demo nor
the template (tests/template/test_copier.py checks whole generated products the same way)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[2]
JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined)  # noqa: S701 - renders Markdown and paths, not HTML

# The service's tier `starter` is the service's word, not the template's name.
SERVICE_TIER = re.compile(r"`starter`|free\\?\|starter\\?\|growth\\?\|business|free, starter, growth, business")
TEMPLATE_WORDS = re.compile(r"starter|demo", re.IGNORECASE)


def excluded_without_the_demo() -> list[str]:
    """copier.yml's `_exclude` patterns, its Jinja rendered for a product generated with `demo=false` (and the
    sandbox embedded, the answer that ships the most pages)."""
    answers = yaml.safe_load((ROOT / "copier.yml").read_text())
    patterns: list[str] = []
    for entry in answers["_exclude"]:
        rendered = JINJA.from_string(entry).render(demo=False, sandbox="embedded")
        patterns.extend(line.strip() for line in rendered.splitlines() if line.strip())
    return patterns


def shipped_without_the_demo(paths: list[Path]) -> list[Path]:
    patterns = excluded_without_the_demo()

    def excluded(path: Path) -> bool:
        relative = path.relative_to(ROOT).as_posix()
        return any(
            fnmatch.fnmatch(relative, pattern) or relative.startswith(pattern.rstrip("/") + "/") for pattern in patterns
        )

    return [path for path in paths if not excluded(path)]


def product_readmes() -> list[str]:
    """README.md.jinja as copier renders it for a product without the demo, for each other answer."""
    template = JINJA.from_string((ROOT / "README.md.jinja").read_text())
    return [
        template.render(
            project_name="Acme Live", license_holder="Acme", demo=False, sandbox=sandbox, token_sharing=sharing
        )
        for sandbox in ("embedded", "tests")
        for sharing in ("login", "site")
    ]


def template_words(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if TEMPLATE_WORDS.search(SERVICE_TIER.sub("", line))]


def test_the_docs_a_product_without_the_demo_gets_name_neither_the_demo_nor_the_starter() -> None:
    docs = sorted((ROOT / "docs").glob("*.md"))
    shipped = shipped_without_the_demo(docs)
    assert ROOT / "docs" / "deploy.md" in shipped  # the patterns still select
    assert not {ROOT / "docs" / name for name in ("starter.md", "demo.md", "follow-a-mint.md")} & set(shipped)
    found = {str(path.relative_to(ROOT)): template_words(path.read_text()) for path in shipped}
    assert {page: lines for page, lines in found.items() if lines} == {}


def test_the_product_readme_without_the_demo_names_neither_the_demo_nor_the_starter() -> None:
    for readme in product_readmes():
        assert readme.startswith("# Acme Live\n")
        assert template_words(readme) == []


def test_the_template_words_are_recognised() -> None:
    assert template_words("make demo\nYour own product from this starter\nthe Starter") == [
        "make demo",
        "Your own product from this starter",
        "the Starter",
    ]
    assert template_words("| `starter` | 300 |\n`--tier` (free, starter, growth, business)") == []
