"""The README's steps for an existing site, run exactly in their order in a brand-new
`django-admin startproject` site on Python 3.13 and Django 6.1 (the pair a new integrator gets
today): install from a checkout, paste the wiring, then the commands between
`<!-- existing-site: commands -->` and `<!-- /existing-site: commands -->`, one by one."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.lock import pins
from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import LOCKED, PROJECT_ROOT, install, run, run_status
from tests.standalone.test_readme_wiring import readme_snippets

PYTHON = "3.13"
DJANGO_SERIES = "6.1"
COMMANDS = re.compile(
    r"<!-- existing-site: commands -->\s*```sh\n(?P<code>.*?)```\s*<!-- /existing-site: commands -->", re.DOTALL
)


def readme_commands() -> list[list[str]]:
    """The README's existing-site commands, in their order, each split as a shell would (comments dropped)."""
    (block,) = COMMANDS.findall((PROJECT_ROOT / "README.md").read_text())
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.split("#", 1)[0].strip()]


def interpreter(version: str) -> Path | None:
    """This machine's python`version`: the newest patch pyenv installed, or the one on PATH (not a pyenv
    shim, which answers only for the versions selected)."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(versions.glob(f"{version}.*/bin/python{version}")) if versions.is_dir() else []
    found = shutil.which(f"python{version}")
    return installed[-1] if installed else Path(found) if found and "shims" not in found else None


@pytest.fixture(scope="module")
def python_313(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment on Python 3.13 with Django 6.1 and this project, installed from a
    checkout as the README's first step does (the base dependencies at the lock's pins, without hashes)."""
    base = interpreter(PYTHON)
    if base is None:
        message = f"Python {PYTHON} not found: install it (pyenv install {PYTHON}) to run the README's steps on it."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    folder = tmp_path_factory.mktemp("readme-steps")
    constraints = folder / "constraints.txt"
    locked = [pin for name, lines in pins(LOCKED).items() if name != "django" for pin in lines]
    constraints.write_text("\n".join([*locked, ""]))
    run([str(base), "-m", "venv", str(folder / "venv")], cwd=folder)
    python = folder / "venv" / "bin" / "python"
    return install(python, "-c", str(constraints), str(checkout), f"Django=={DJANGO_SERIES}.*")


def test_the_readme_lists_the_commands_in_an_order_that_works() -> None:
    commands = readme_commands()
    assert [command[0] for command in commands] == ["export", "export", "python", "python"]
    assert [command[1:] for command in commands[2:]] == [["manage.py", "migrate"], ["manage.py", "check"]]


def test_the_readme_steps_work_in_their_order_in_a_new_project(
    python_313: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    versions = run(
        [str(python_313), "-c", "import sys, django; print(sys.version_info[:2], django.VERSION[:2])"], cwd=tmp_path
    )
    assert versions.strip() == "(3, 13) (6, 1)"
    root = tmp_path / "site"
    root.mkdir()
    run([str(python_313), "-m", "django", "startproject", "mysite", "."], cwd=root)
    for file_name, code in readme_snippets().items():
        with (root / "mysite" / file_name).open("a") as project_file:
            project_file.write("\n" + code)

    values = {"SPORTS_API_KEY": sandbox.api_key, "SPORTS_BASE_URL": sandbox.url}  # the placeholders, filled in
    environment: dict[str, str] = {}
    outputs = []
    for command in readme_commands():
        if command[0] == "export":
            name = command[1].split("=", 1)[0]
            environment[name] = values[name]
            continue
        assert command[0] == "python"
        status, output = run_status([str(python_313), *command[1:]], cwd=root, env=environment)
        assert status == 0, f"{shlex.join(command)} exited {status} in the README's order:\n{output}"
        outputs.append(output)
    assert "System check identified no issues" in outputs[-1]
    assert sandbox.api_key not in "".join(outputs)
