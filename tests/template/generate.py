"""Projects generated from this repository as a copier template (copier.yml), outside it, and how to run them.

The template is a git clone of this checkout: copier renders committed files only, so these tests try the
last commit. Every generated project runs on one virtualenv made from the lock (uv, its cache), not this
checkout's, so that nothing of this checkout's code is importable from a generated project.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT = 180.0  # seconds: one command of a generated project (check, migrate, a test subset)
QUICK_LOOP_TIMEOUT = 600.0  # seconds: its `make check` (linters, tsc, the unit tests), beside the rest of the gate
# A product's `make check` beside the rest of this gate runs its quick tests in one process (`-n 0`), not on its
# default four workers: this gate's own four already fill the cores, and each more worker is one more Django start
# and collection of the same tests.
QUICK_LOOP_WORKERS = "0"
PRODUCT_GATE_TIMEOUT = 1200.0  # seconds: its whole `make test`


def run(command: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = COMMAND_TIMEOUT) -> str:
    """Run `command` and return its output (stdout and stderr); fail with that output when it exits non-zero."""
    done = subprocess.run(  # noqa: S603 - fixed commands of the tests
        command,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode} in {cwd}:\n{output[-6000:]}"
    return output


def git(cwd: Path, *arguments: str) -> str:
    identity = ["-c", "user.name=Starter tests", "-c", "user.email=starter@example.com", "-c", "commit.gpgsign=false"]
    return run(["git", *identity, *arguments], cwd)


def clone_template(destination: Path) -> Path:
    """A clone of this checkout's last commit: the template as `copier copy <its git URL>` would see it."""
    # --no-local packs the objects: copier walks the template's .git too, and loose objects cost it a render each.
    run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(destination)], ROOT)
    return destination


def make_venv(folder: Path) -> Path:
    """One virtualenv with everything the lock's requirements-dev.txt names, hash-checked; returns its bin/."""
    uv = ROOT / ".venv" / "bin" / "uv"
    run([str(uv), "venv", "--quiet", "--python", str(ROOT / ".venv" / "bin" / "python"), str(folder)], ROOT)
    python = folder / "bin" / "python"
    install = [str(uv), "pip", "install", "--quiet", "--python", str(python), "--require-hashes", "--no-deps"]
    run([*install, "-r", str(ROOT / "requirements-dev.txt")], ROOT)
    return folder / "bin"


COPIER = str(ROOT / ".venv" / "bin" / "copier")
MAKE = shutil.which("make") or "make"


def copier_copy(template: Path, destination: Path, answers: Mapping[str, str]) -> Path:
    """`copier copy --defaults` with `answers`, then the project committed to a new git repository, as
    docs/starter.md says."""
    data = [part for name, value in answers.items() for part in ("--data", f"{name}={value}")]
    command = [COPIER, "copy", "--quiet", "--defaults", "--vcs-ref", "HEAD", *data, str(template), str(destination)]
    run(command, destination.parent)
    git(destination, "init", "--quiet", "--initial-branch", "main")
    git(destination, "add", "-A")
    git(destination, "commit", "--quiet", "-m", "Generated")
    return destination


# How this machine reaches the package registries (certificates, proxies, npm's and pip's own settings): a
# contributor's shell has them, and without them `npm ci` retries TLS for minutes before it reads its cache.
MACHINE_VARIABLES = re.compile(r"(?i)(.*_proxy|.*_ca_certs?|ssl_cert_.*|.*_ca_bundle|npm_config_.*|pip_.*|uv_.*)")


def environment(project: Path, venv_bin: Path | None, **settings: str) -> dict[str, str]:
    """A generated project's own environment: none of this test run's variables but how the machine reaches the
    registries, its own database, debug on; `venv_bin` first on PATH, if any."""
    path = os.environ["PATH"] if venv_bin is None else f"{venv_bin}{os.pathsep}{os.environ['PATH']}"
    base = {
        **{name: value for name, value in os.environ.items() if MACHINE_VARIABLES.fullmatch(name)},
        "PATH": path,
        "HOME": os.environ.get("HOME", str(project)),
        "LANG": "C.UTF-8",
        "DJANGO_ENV_FILE": "",
        "DJANGO_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{project / 'db.sqlite3'}",
    }
    return {**base, **settings}


def clean_clone(project: Path, destination: Path) -> Path:
    """`git clone` of a generated project: what its team's CI checks out."""
    run(["git", "clone", "--quiet", str(project), str(destination)], project.parent)
    return destination


def share_venv(clone: Path, venv_bin: Path) -> None:
    """The shared virtualenv stands in for the one `make install-dev` would build from the same lock (the same
    pins and hashes: only the project's own name differs), so `make` finds it installed."""
    (clone / ".venv").symlink_to(venv_bin.parent)
    for marker in (venv_bin / "uv", venv_bin.parent / ".installed", venv_bin.parent / ".installed-dev"):
        marker.touch()


def manage(project: Path, env: Mapping[str, str], *arguments: str) -> str:
    return run([str(Path(env["PATH"].split(os.pathsep)[0]) / "python"), "manage.py", *arguments], project, env)
