"""copier.yml: `copier update` brings a later template commit into a generated project that has its own commits,
keeping its changes elsewhere, and records the new commit and the same answers in `.copier-answers.yml`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.starter.generate import COPIER, clone_template, copier_copy, git, run

LATER_FIX = "\nA later fix of the starter, brought in by `copier update`.\n"
OWN_CHANGE = "\n/* The product's own style. */\n"


def answers(project: Path) -> dict[str, object]:
    recorded: dict[str, object] = yaml.safe_load((project / ".copier-answers.yml").read_text())
    return recorded


def test_copier_update_applies_a_later_template_commit_and_keeps_the_projects_own(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    template = clone_template(tmp_path_factory.mktemp("template") / "starter")
    project = copier_copy(
        template, tmp_path_factory.mktemp("product") / "project", {"demo": "false", "project_name": "Acme"}
    )
    made_from = answers(project)["_commit"]

    with (project / "static" / "site.css").open("a") as style:
        style.write(OWN_CHANGE)
    git(project, "commit", "--quiet", "-am", "Our own style")

    with (template / "docs" / "deploy.md").open("a") as page:
        page.write(LATER_FIX)
    git(template, "commit", "--quiet", "-am", "A later fix")

    run([COPIER, "update", "--quiet", "--defaults", "--vcs-ref", "HEAD"], project)

    assert (project / "docs" / "deploy.md").read_text().endswith(LATER_FIX)  # the template's change, applied
    assert (project / "static" / "site.css").read_text().endswith(OWN_CHANGE)  # the project's, kept
    recorded = answers(project)
    assert recorded["_commit"] != made_from
    assert (recorded["project_name"], recorded["demo"], recorded["sandbox"]) == ("Acme", False, "embedded")
    assert not (project / "config" / "demo").exists()  # the answers held: the demo stays out
    changed = git(project, "status", "--porcelain").splitlines()
    assert sorted(line[3:] for line in changed) == [".copier-answers.yml", "docs/deploy.md"]
