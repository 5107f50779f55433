"""copier.yml: `copier copy` with each choice (and `--defaults`) makes a project outside this repository that
checks, migrates, logs in and mints against the standalone sandbox, and opens its page in Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from sportsproxy.testing import SportsSandbox, start_sandbox
from tests.starter.generate import (
    OWNER,
    OWNER_PASSWORD,
    QUICK_LOOP_TIMEOUT,
    ROOT,
    clone_template,
    copier_copy,
    create_owner,
    environment,
    git,
    log_in_and_mint,
    make_venv,
    manage,
    run,
    serving,
)

NAME = "Acme Live Scores"
CHOICES = {
    "defaults": {},
    "without-demo": {"demo": "false", "project_name": NAME},
    "sandbox-for-tests": {"sandbox": "tests", "token_sharing": "site", "project_name": "Tests Only"},
}
# What a project without the demo holds nowhere: not in a file, not in a path.
DEMO_WORDS = (
    "demo_setup",
    "demo-pass-123",
    "DEMO_PASSWORD",
    "config.demo",
    "config/demo",
    "make demo",
    "Expire my token",
    "Drop the socket",
)
MAKE = shutil.which("make") or "make"
PLUGIN_TEST = "tests/sportsproxy/test_testing.py::test_expire_token_makes_a_valid_token_expired"  # uses sports_sandbox
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    # The suite's own fixtures open this process's test database; sync Playwright keeps a loop in this thread.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "venv")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The project made with CHOICES[name], generated once for the module."""
    template = clone_template(tmp_path_factory.mktemp("template") / "starter")
    made: dict[str, Path] = {}

    def project(name: str) -> Path:
        if name not in made:
            made[name] = copier_copy(template, tmp_path_factory.mktemp(name) / "project", CHOICES[name])
        return made[name]

    return project


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SportsSandbox]:
    """The standalone sandbox (`python -m sportsproxy.sandbox serve`): the service the projects call."""
    server = start_sandbox()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium not found: install Debian's chromium package or set CHROMIUM_PATH.")
        pytest.skip("Chromium not found: install Debian's chromium package or set CHROMIUM_PATH.")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def against(sandbox: SportsSandbox, project: Path, venv_bin: Path) -> dict[str, str]:
    """The project's environment calling the standalone sandbox (so not mounting its own)."""
    return environment(
        project,
        venv_bin,
        SPORTS_BASE_URL=sandbox.base_url,
        SPORTS_API_KEY=sandbox.api_key,
        SPORTS_PUBLIC_BASE_URL=sandbox.base_url,
        SPORTS_PUBLIC_WS_URL=sandbox.ws_url,
    )


def defaults_in(project: Path, venv_bin: Path) -> str:
    """What the project's settings default to, with no variable of the service set."""
    script = (
        "from django.conf import settings as s; "
        "print(s.SPORTS_SANDBOX, 'sportsproxy.sandbox' in s.INSTALLED_APPS, s.SPORTS_TOKEN_SHARING)"
    )
    return manage(project, environment(project, venv_bin), "shell", "-c", script).strip().splitlines()[-1]


def test_the_defaults_give_this_repositorys_project(generated: Callable[[str], Path]) -> None:
    project = generated("defaults")
    # One place for each fact: the rendered twin of config/project.py is the file this repository runs on.
    assert (project / "config" / "project.py").read_text() == (ROOT / "config" / "project.py").read_text()
    assert (project / "config" / "demo").is_dir()
    assert (project / "README.md").read_text().startswith("# Sports token starter\n")
    assert "make demo" in (project / "README.md").read_text()


@pytest.mark.parametrize("choice", CHOICES)
def test_the_project_is_its_own(generated: Callable[[str], Path], choice: str) -> None:
    project = generated(choice)
    name = CHOICES[choice].get("project_name", "Sports token starter")
    files = git(project, "ls-files").split()
    assert ".copier-answers.yml" in files
    assert [
        path for path in files if path.endswith(".jinja") or "copier.y" in path or "starter" in path.split("/")
    ] == []
    assert not (project / "docs" / "starter.md").exists()
    readme = (project / "README.md").read_text()
    assert readme.startswith(f"# {name}\n")
    assert "make test" in readme
    assert f"NAME: Final = {name!r}".replace("'", '"') in (project / "config" / "project.py").read_text()
    assert git(project, "status", "--porcelain") == ""  # nothing generated that .gitignore hides or git misses


@pytest.mark.parametrize("choice", CHOICES)
def test_check_migrate_login_mint_and_the_page_in_chromium(
    generated: Callable[[str], Path], venv_bin: Path, sandbox: SportsSandbox, browser: Browser, choice: str
) -> None:
    project = generated(choice)
    name = CHOICES[choice].get("project_name", "Sports token starter")
    env = against(sandbox, project, venv_bin)
    manage(project, env, "check", "--fail-level", "ERROR")
    manage(project, env, "migrate", "--no-input")
    create_owner(project, env)
    with serving(project, env) as site:
        minted = log_in_and_mint(site)
        assert minted.status_code == 200, minted.text
        assert set(minted.json()) == {"token", "expiresAt"}

        page = browser.new_page()
        console_errors: list[str] = []
        page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
        page.goto(f"{site}/accounts/login/?next=/")
        page.fill("#id_username", OWNER)
        page.fill("#id_password", OWNER_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{site}/")
        expect(page.locator("#project-name")).to_have_text(name)
        expect(page.locator("#token-fingerprint")).to_contain_text("…")
        expect(page.locator("#connection-state")).to_have_text("open", timeout=15_000)
        if CHOICES[choice].get("demo") == "false":
            expect(page.locator("h1")).to_have_text(name)  # the starting page, at `/`
            for control in ("Expire my token", "Drop the socket"):
                expect(page.get_by_text(control)).to_have_count(0)
        assert console_errors == []
        page.close()


def test_without_the_demo_nothing_demo_named_remains(generated: Callable[[str], Path], venv_bin: Path) -> None:
    project = generated("without-demo")
    files = git(project, "ls-files").split()
    assert [path for path in files if "demo" in path.lower()] == []
    found = {
        path: [word for word in DEMO_WORDS if word in text]
        for path in files
        if (text := (project / path).read_bytes().decode("utf-8", errors="replace"))
    }
    assert {path: words for path, words in found.items() if words} == {}
    no_target = subprocess.run(  # noqa: S603 - fixed command
        [MAKE, "-n", "demo"], cwd=project, capture_output=True, text=True, timeout=60, check=False
    )
    assert "No rule to make target 'demo'" in no_target.stderr
    unknown = subprocess.run(  # noqa: S603 - fixed command
        [str(venv_bin / "python"), "manage.py", "demo_setup"],
        cwd=project,
        env=environment(project, venv_bin),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unknown.returncode != 0
    assert "Unknown command: 'demo_setup'" in unknown.stderr


def test_without_the_demo_slash_is_the_starting_page(
    generated: Callable[[str], Path], venv_bin: Path, sandbox: SportsSandbox
) -> None:
    project = generated("without-demo")
    env = against(sandbox, project, venv_bin)
    manage(project, env, "migrate", "--no-input")
    with serving(project, env) as site:
        start = httpx2.get(f"{site}/", timeout=10)
        assert start.status_code == 200
        assert f"<h1>{NAME}</h1>" in start.text
        assert 'id="log-in"' in start.text
        assert httpx2.get(f"{site}/start/", timeout=10).status_code == 404  # one starting page, at `/`


def test_the_embedded_sandbox_is_mounted_and_installed_by_default(
    generated: Callable[[str], Path], venv_bin: Path
) -> None:
    project = generated("defaults")
    assert defaults_in(project, venv_bin) == "True True login"
    env = environment(project, venv_bin)
    manage(project, env, "migrate", "--no-input")
    assert "key_" in manage(project, env, "sandbox_key", "create", "--account", "starter")


def test_with_the_sandbox_for_tests_the_site_never_installs_it(
    generated: Callable[[str], Path], venv_bin: Path
) -> None:
    project = generated("sandbox-for-tests")
    assert defaults_in(project, venv_bin) == "False False site"
    env = environment(project, venv_bin, SPORTS_BASE_URL="http://127.0.0.1:9", SPORTS_API_KEY="sk_test_" + "u" * 40)
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


def test_with_the_sandbox_for_tests_the_pytest_plugin_serves_the_tests(
    generated: Callable[[str], Path], venv_bin: Path
) -> None:
    project = generated("sandbox-for-tests")
    env = environment(project, venv_bin)
    output = run(
        [str(venv_bin / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", PLUGIN_TEST],
        project,
        env,
    )
    assert " passed" in output


def test_make_check_passes_in_a_clean_clone(generated: Callable[[str], Path], venv_bin: Path, tmp_path: Path) -> None:
    """`git clone` of a generated project, then `make check` (the linters, the quick tests) on the lock's packages."""
    clone = tmp_path / "clone"
    run(["git", "clone", "--quiet", str(generated("without-demo")), str(clone)], tmp_path)
    # The shared virtualenv stands in for the one `make install-dev` would build from the same lock.
    (clone / ".venv").symlink_to(venv_bin.parent)
    for marker in (venv_bin / "uv", venv_bin.parent / ".installed", venv_bin.parent / ".installed-dev"):
        marker.touch()
    output = run([MAKE, "check"], clone, environment(clone, venv_bin), timeout=QUICK_LOOP_TIMEOUT)
    assert " passed" in output
    assert "All checks passed!" in output
