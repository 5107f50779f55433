"""The requirements files checked against uv.lock and pyproject.toml with the standard library alone.

    python -I -S tests/lockfile.py     before `make install` and `make install-dev` install anything

Run by the machine's own Python before the virtual environment is created or installed into: nothing
from a requirements file can run before its lines are known to be the lock's. A requirements file is
what uv.lock says it must be when every line pins a package uv.lock holds at that version from the
index, with exactly the hashes uv.lock holds for it; when it carries no other line (no URL, no path,
no pip option); and when its packages are exactly those reachable in uv.lock from what pyproject.toml
declares for that file (EXPORTS). pyproject.toml's declarations are compared with those uv.lock
recorded when it was resolved, so a dependency added to one without `make lock` fails too. What this
cannot see, `make test`'s `lockcheck` (tests/lock.py, with uv) does: a uv.lock that disagrees with the
index, or a marker written differently.

Standard library only, and importable without the `tests` package: `-I -S` keep everything else away.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STALE = "{name} does not match uv.lock ({why}): run `make lock` and commit what it changes, never edit it by hand."
DECLARED = "pyproject.toml's dependencies disagree with uv.lock ({why}): run `make lock` and commit what it changes."
# What each export holds, as tests/lock.py asks uv for it: the base, every extra, and these groups.
EXPORTS = {"requirements.txt": ("site",), "requirements-dev.txt": ("site", "dev")}
PIN = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)"
    r"(?: ; [^\\#]+?)?(?P<hashes>(?: --hash=sha256:[0-9a-f]{64})+)"
)

Key = tuple[str, str]  # (normalized name, version)


def normalized(name: str) -> str:
    """PEP 503's form of a project name: `PyJWT` and `py_jwt` are `pyjwt` and `py-jwt`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    """uv.lock's packages by (name, version)."""
    return {(normalized(package["name"]), package["version"]): package for package in lock["package"]}


def root_of(lock: dict[str, Any], project: str) -> dict[str, Any]:
    """The project's own entry in uv.lock (its source is the checkout, not the index)."""
    return next(package for package in lock["package"] if normalized(package["name"]) == normalized(project))


def reachable(lock: dict[str, Any], project: str, groups: tuple[str, ...]) -> set[Key]:
    """Every package one export pins: the project's base, its extras and `groups`, and all they need.

    Markers are followed as uv exports them, for every platform at once (a marker narrows where a line
    installs, never which lines there are)."""
    packages = locked(lock)
    by_name: dict[str, list[Key]] = {}
    for key in packages:
        by_name.setdefault(key[0], []).append(key)
    root = root_of(lock, project)
    edges = list(root.get("dependencies", []))
    edges += [edge for extra in root.get("optional-dependencies", {}).values() for edge in extra]
    edges += [edge for group in groups for edge in root.get("dev-dependencies", {}).get(group, [])]
    found: set[Key] = set()
    followed: set[tuple[Key, str]] = set()  # (package, extra) whose dependencies are already edges
    while edges:
        edge = edges.pop()
        for key in by_name.get(normalized(edge["name"]), []):
            if "version" in edge and key[1] != edge["version"]:
                continue
            extras = [extra for extra in edge.get("extra", []) if (key, extra) not in followed]
            if key in found and not extras:
                continue
            if key not in found:
                found.add(key)
                edges += packages[key].get("dependencies", [])
            for extra in extras:
                followed.add((key, extra))
                edges += packages[key].get("optional-dependencies", {}).get(extra, [])
    return found


def hashes_of(package: dict[str, Any]) -> set[str]:
    """Every hash uv.lock holds for a package: its sdist's and its wheels'."""
    files = [package["sdist"]] if "sdist" in package else []
    return {file["hash"] for file in [*files, *package.get("wheels", [])]}


def pinned(text: str) -> tuple[dict[Key, set[str]], list[str]]:
    """A requirements file's pins with their hashes, and every line that is not such a pin."""
    pins: dict[Key, set[str]] = {}
    strays: list[str] = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        requirement = re.sub(r"\s+", " ", line).strip()
        if not requirement or requirement.startswith("#"):
            continue
        match = PIN.fullmatch(requirement)
        key = (normalized(match["name"]), match["version"]) if match else None
        if match is None or key is None or key in pins:
            strays.append(requirement[:80])
            continue
        pins[key] = set(re.findall(r"sha256:([0-9a-f]{64})", match["hashes"]))
    return pins, strays


def file_problem(name: str, text: str, lock: dict[str, Any], project: str) -> str | None:
    """Why one requirements file is not uv.lock's export, or None when it is."""
    pins, strays = pinned(text)
    if strays:
        return f"a line that is not a hashed pin of uv.lock: {strays[0]!r}"
    packages = locked(lock)
    for key, hashes in sorted(pins.items()):
        package = packages.get(key)
        if package is None or "registry" not in package.get("source", {}):
            return f"{key[0]}=={key[1]} is not in uv.lock"
        if {f"sha256:{digest}" for digest in hashes} != hashes_of(package):
            return f"{key[0]}=={key[1]}'s hashes are not uv.lock's"
    expected = reachable(lock, project, EXPORTS[name])
    missing, extra = sorted(expected - set(pins)), sorted(set(pins) - expected)
    if missing or extra:
        which = (missing or extra)[0]
        return f"{which[0]}=={which[1]} {'is missing' if missing else 'is not needed by pyproject.toml'}"
    return None


def requirement(declared: str) -> tuple[str, tuple[str, ...], str]:
    """A PEP 508 string as uv.lock records it: (name, sorted extras, specifier without spaces)."""
    match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*([^;]*?)\s*(?:;.*)?", declared)
    if match is None:
        return (declared, (), "")
    extras = tuple(sorted(normalized(extra) for extra in (match[2] or "").split(",") if extra.strip()))
    return (normalized(match[1]), extras, re.sub(r"\s+", "", match[3]))


def recorded(entries: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], str]]:
    """uv.lock's record of the declarations, in requirement()'s form."""
    return sorted(
        (normalized(entry["name"]), tuple(sorted(entry.get("extras", []))), entry.get("specifier", ""))
        for entry in entries
    )


def declared_problem(pyproject: dict[str, Any], lock: dict[str, Any]) -> str | None:
    """Where pyproject.toml's declarations differ from those uv.lock was resolved from, or None."""
    project = pyproject["project"]
    metadata = root_of(lock, project["name"]).get("metadata", {})
    base = [requirement(entry) for entry in project.get("dependencies", [])]
    base += [requirement(entry) for extra in project.get("optional-dependencies", {}).values() for entry in extra]
    if sorted(base) != recorded(metadata.get("requires-dist", [])):
        return "[project] dependencies or extras"
    groups: dict[str, list[Any]] = pyproject.get("dependency-groups", {})
    for group in groups:
        entries = list(groups[group])
        strings: list[str] = []
        while entries:
            entry = entries.pop()
            if isinstance(entry, dict):
                entries += groups[entry["include-group"]]
            else:
                strings.append(entry)
        if sorted({requirement(entry) for entry in strings}) != sorted(
            set(recorded(metadata.get("requires-dev", {}).get(group, [])))
        ):
            return f"the {group!r} group"
    return None


def problems(root: Path = ROOT) -> list[str]:
    """Each way the requirements files or pyproject.toml disagree with uv.lock: empty when they agree."""
    try:
        lock = tomllib.loads((root / "uv.lock").read_text())
        pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        return [f"uv.lock or pyproject.toml cannot be read ({error}): run `make lock`."]
    found = []
    declared = declared_problem(pyproject, lock)
    if declared:
        found.append(DECLARED.format(why=declared))
    for name in EXPORTS:
        try:
            why = file_problem(name, (root / name).read_text(), lock, pyproject["project"]["name"])
        except OSError:
            why = "missing"
        if why:
            found.append(STALE.format(name=name, why=why))
    return found


def main() -> int:
    found = problems(Path.cwd())
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
