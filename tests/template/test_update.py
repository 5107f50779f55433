"""copier.yml: `copier update` brings a later template commit into a product that has its own commits, keeping its
changes elsewhere and leaving it green on its own `make check`; a conflicting one leaves markers, still exits 0
(copier's way), and the product's gate then fails, naming the file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.template.generate import (
    COPIER,
    MAKE,
    QUICK_LOOP_TIMEOUT,
    QUICK_LOOP_WORKERS,
    clean_clone,
    clone_template,
    copier_copy,
    environment,
    git,
    run,
    share_venv,
)
from tests.template.products import UPDATED

LATER_DOC = "\nA later fix of the template, brought in by `copier update`.\n"
LATER_CODE = ("two thin entries over one set of rules.", "two thin entries, one set of rules.")  # mintroute/views.py
OWN_CHANGE = "\n/* The product's own style. */\n"


def answers(project: Path) -> dict[str, object]:
    recorded: dict[str, object] = yaml.safe_load((project / ".copier-answers.yml").read_text())
    return recorded


def update(project: Path) -> str:
    return run([COPIER, "update", "--quiet", "--defaults", "--vcs-ref", "HEAD"], project)


def commit_to(repository: Path, message: str) -> None:
    git(repository, "commit", "--quiet", "-am", message)


def test_copier_update_applies_a_later_template_commit_keeps_the_products_own_and_stays_green(
    tmp_path_factory: pytest.TempPathFactory, venv_bin: Path
) -> None:
    template = clone_template(tmp_path_factory.mktemp("template") / "starter")
    project = copier_copy(template, tmp_path_factory.mktemp("product") / "project", UPDATED.answers)
    made_from = answers(project)["_commit"]

    with (project / "static" / "site.css").open("a") as style:
        style.write(OWN_CHANGE)
    commit_to(project, "Our own style")

    with (template / "docs" / "deploy.md").open("a") as page:
        page.write(LATER_DOC)
    views = template / "mintroute" / "views.py"
    assert LATER_CODE[0] in views.read_text()
    views.write_text(views.read_text().replace(*LATER_CODE))
    commit_to(template, "A later fix")

    update(project)

    assert (project / "docs" / "deploy.md").read_text().endswith(LATER_DOC)  # the template's changes, applied
    assert LATER_CODE[1] in (project / "mintroute" / "views.py").read_text()
    assert (project / "static" / "site.css").read_text().endswith(OWN_CHANGE)  # the product's, kept
    recorded = answers(project)
    assert recorded["_commit"] != made_from
    assert (recorded["project_name"], recorded["demo"], recorded["sandbox"]) == (UPDATED.name, False, "embedded")
    assert not (project / "config" / "demo").exists()  # the answers held: the demo stays out
    changed = sorted(line[3:] for line in git(project, "status", "--porcelain").splitlines())
    assert changed == [".copier-answers.yml", "docs/deploy.md", "mintroute/views.py"]

    commit_to(project, "Take the template's later fix")
    clone = clean_clone(project, tmp_path_factory.mktemp("clone") / "clone")
    share_venv(clone, venv_bin)
    env = environment(clone, venv_bin, PYTEST_WORKERS=QUICK_LOOP_WORKERS)
    output = run([MAKE, "check"], clone, env, timeout=QUICK_LOOP_TIMEOUT)
    assert " passed" in output


def test_a_conflicting_update_leaves_markers_exits_0_and_the_gate_fails_on_them(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    template = clone_template(tmp_path_factory.mktemp("template") / "starter")
    project = copier_copy(template, tmp_path_factory.mktemp("product") / "project", UPDATED.answers)
    first_line = (project / "docs" / "deploy.md").read_text().splitlines()[0]
    for repository, title in ((project, "# Deploying our product"), (template, "# Deploying the site")):
        page = repository / "docs" / "deploy.md"
        page.write_text(page.read_text().replace(first_line, title, 1))
        commit_to(repository, "Retitle the deploy page")

    update(project)  # exits 0, as copier does

    assert "<<<<<<< before updating" in (project / "docs" / "deploy.md").read_text()
    gate = subprocess.run(  # noqa: S603 - fixed command
        [MAKE, "conflicts"], cwd=project, capture_output=True, text=True, timeout=60, check=False
    )
    assert gate.returncode != 0
    assert "docs/deploy.md:1:<<<<<<< before updating" in gate.stdout
    assert "Conflict markers are left in the files above" in gate.stdout
