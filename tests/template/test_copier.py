"""copier.yml: every combination of the answers makes a product that is its own (its name, nothing of the
template but the answers file) and green on its own gate from a clean clone: the one that differs most from this
repository (DIVERSE) its whole `make test`, every other one its `make check`."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import stores
from tests.redis_server import RedisServer
from tests.template.generate import (
    COPIER,
    MAKE,
    PRODUCT_GATE_TIMEOUT,
    QUICK_LOOP_TIMEOUT,
    QUICK_LOOP_WORKERS,
    ROOT,
    clean_clone,
    environment,
    git,
    manage,
    run,
    share_venv,
)
from tests.template.products import DEFAULT_NAME, DIVERSE, PRODUCTS, UPDATED, Product

# The files whose .jinja twin renders, for the default answers, to the very file this repository runs on.
TWINS = (
    "config/project.py",
    "pyproject.toml",
    "uv.lock",
    "LICENSE",
    "mintroute/static/sports/LICENSE",
    "mintroute/static/sports/package.json",
)
TEMPLATE_WORDS = re.compile(rb"starter|demo", re.IGNORECASE)
# The service's own word: its accounts' tier named "starter" (the service's interface), not this template.
SERVICE_TIER = re.compile(
    rb"""["'`]starter["'`]|free, starter, growth|free\\?\|starter|default: starter"""
    rb"""|\bstarter\b(?= tier)|(?<=tier )starter\b""",
    re.IGNORECASE,
)


def tracked(project: Path) -> list[str]:
    return git(project, "ls-files", "-z").split("\0")[:-1]


@pytest.mark.parametrize("key", PRODUCTS)
def test_the_product_is_its_own(generated: Callable[[Product], Path], key: str) -> None:
    product = PRODUCTS[key]
    project = generated(product)
    files = tracked(project)
    assert ".copier-answers.yml" in files
    assert [path for path in files if path.endswith(".jinja") or "copier.y" in path or "starter" in path] == []
    for template_only in ("noxfile.py", "make/matrix.mk", "tests/standalone", "tests/template", "docs/starter.md"):
        assert not (project / template_only).exists(), template_only
    assert (project / "README.md").read_text(encoding="utf-8").startswith(f"# {product.name}\n")
    assert (project / "CHANGELOG.md").read_text(encoding="utf-8").count("## [") == 1  # its own, from its first day
    assert f"NAME: Final = {product.name!r}".replace("'", '"') in (project / "config" / "project.py").read_text(
        encoding="utf-8"
    )
    assert f"Copyright (c) 2026 {product.name}\n" in (project / "LICENSE").read_text(encoding="utf-8")
    assert git(project, "status", "--porcelain") == ""  # nothing generated that .gitignore hides or git misses


def test_the_defaults_twins_are_this_repositorys_own_files(generated: Callable[[Product], Path]) -> None:
    """One place for each fact: for the default answers, every rendered twin is the file this repository runs on."""
    project = generated(PRODUCTS["demo-embedded-login"])
    assert [path for path in TWINS if (project / path).read_bytes() != (ROOT / path).read_bytes()] == []
    assert (project / "README.md").read_text().startswith(f"# {DEFAULT_NAME}\n")


def test_a_product_is_named_by_its_answers(generated: Callable[[Product], Path]) -> None:
    named = {key: (generated(product) / "pyproject.toml").read_text() for key, product in PRODUCTS.items()}
    assert 'name = "acme-live-scores"' in named["no-demo-tests-site"]
    assert 'name = "ligue-des-toiles"' in named["no-demo-embedded-site"]
    assert 'name = "product"' in named["no-demo-embedded-login"]  # no Latin letter to make a name of
    project = generated(DIVERSE)
    assert '"name": "@acme-live-scores/sports-client"' in (project / "mintroute/static/sports/package.json").read_text()
    assert 'name = "acme-live-scores"\n' in (project / "uv.lock").read_text()  # the lock agrees: `make lock` clean


@pytest.mark.parametrize("key", [key for key, product in PRODUCTS.items() if not product.demo])
def test_a_product_without_the_demo_names_neither_the_demo_nor_the_template(
    generated: Callable[[Product], Path], key: str
) -> None:
    """`grep -ri "starter\\|demo"` finds only the answers file (and the service's own tier word)."""
    project = generated(PRODUCTS[key])
    texts = {path: SERVICE_TIER.sub(b"", (project / path).read_bytes()) for path in tracked(project)}
    found = {
        path: sorted({match.group().decode() for match in TEMPLATE_WORDS.finditer(text)})
        for path, text in texts.items()
        if path != ".copier-answers.yml" and TEMPLATE_WORDS.search(text)
    }
    assert found == {}
    no_target = subprocess.run(  # noqa: S603 - fixed command
        [MAKE, "-n", "demo"], cwd=project, capture_output=True, text=True, timeout=60, check=False
    )
    assert "No rule to make target 'demo'" in no_target.stderr


def test_with_the_sandbox_for_tests_the_site_never_installs_it(
    generated: Callable[[Product], Path], venv_bin: Path
) -> None:
    project = generated(PRODUCTS["demo-tests-login"])
    env = environment(project, venv_bin, SPORTS_BASE_URL="http://127.0.0.1:9", SPORTS_API_KEY="sk_test_" + "u" * 40)
    script = "from django.conf import settings as s; print(s.SPORTS_SANDBOX, 'sportsproxy.sandbox' in s.INSTALLED_APPS)"
    assert manage(project, env, "shell", "-c", script).strip().splitlines()[-1] == "False False"
    manage(project, env, "migrate", "--no-input")
    tables = manage(
        project, env, "shell", "-c", "from django.db import connection as c; print(*c.introspection.table_names())"
    )
    assert [table for table in tables.split() if table.startswith("sandbox")] == []
    listing = subprocess.run(  # noqa: S603 - fixed command
        [str(venv_bin / "python"), "manage.py", "sandbox_key", "list"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Unknown command: 'sandbox_key'" in listing.stderr


# Each on a pytest-xdist worker of its own choosing: one product's gate at a time per worker, spread over both.
CHECKED = [
    pytest.param(key, marks=pytest.mark.xdist_group(f"product-{key}"))
    for key in PRODUCTS
    if key not in (DIVERSE.key, UPDATED.key)
]


@pytest.mark.parametrize("key", CHECKED)
def test_make_check_passes_in_a_clean_clone(
    generated: Callable[[Product], Path], venv_bin: Path, tmp_path: Path, key: str
) -> None:
    """`git clone` of the product, then its `make check` (the linters, the types, its quick tests). DIVERSE runs its
    whole `make test` below, UPDATED its `make check` after `copier update` (tests/template/test_update.py)."""
    clone = clean_clone(generated(PRODUCTS[key]), tmp_path / "clone")
    share_venv(clone, venv_bin)
    env = environment(clone, venv_bin, PYTEST_WORKERS=QUICK_LOOP_WORKERS)
    output = run([MAKE, "check"], clone, env, timeout=QUICK_LOOP_TIMEOUT)
    assert " passed" in output
    assert "All checks passed!" in output


@pytest.mark.serial
def test_make_test_of_the_most_different_product_passes_in_a_clean_clone(
    generated: Callable[[Product], Path], venv_bin: Path, tmp_path: Path
) -> None:
    """The product with no demo, the sandbox for tests only and the site's one token: `git clone`, then its whole
    `make test` (its own virtualenv from its own lock, every test, Chromium), on stores its CI would name."""
    clone = clean_clone(generated(DIVERSE), tmp_path / "clone")
    redis_server = RedisServer()
    redis_server.start()
    try:
        env = environment(
            clone,
            None,  # its own virtualenv, which its `make test` makes
            CI="true",  # a missing tool fails the run instead of skipping its tests
            TEST_REDIS_URL=redis_server.url.rpartition("/")[0] + "/8",
            TEST_DATABASE_URL=stores.DATABASE_URL,
        )
        output = run([MAKE, "test"], clone, env, timeout=PRODUCT_GATE_TIMEOUT)
    finally:
        redis_server.stop()
    summaries = re.findall(r"=+ (.*) in [\d.]+s", output)
    assert summaries, output[-3000:]
    assert all("failed" not in line and "error" not in line and "skipped" not in line for line in summaries), summaries
    assert "All checks passed!" in output


@pytest.mark.parametrize("name", ["Two\nLines", "Carriage\rReturn", "   "])
def test_a_project_name_with_a_line_break_or_nothing_is_refused(template: Path, tmp_path: Path, name: str) -> None:
    answer = ["--data", f"project_name={name}"]
    refused = subprocess.run(  # noqa: S603 - this project's copier
        [
            COPIER,
            "copy",
            "--quiet",
            "--defaults",
            "--vcs-ref",
            "HEAD",
            *answer,
            str(template),
            str(tmp_path / "project"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0
    assert "line break" in refused.stderr or "cannot be empty" in refused.stderr, refused.stderr
    assert not (tmp_path / "project" / "README.md").exists()
