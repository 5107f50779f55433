"""The arrows between the parts point one way, and no module imports itself back in a circle;
inside the sandbox too, between its sub-packages.

Read from the source with `ast`, imports inside functions (the deliberate lazy ones) included
where noted. What importing each part loads at run time is tests/standalone/test_import_rules.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("config", "mintroute", "sportsproxy")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, *, module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    if module_level_only:  # `if TYPE_CHECKING:` blocks count: they are arrows a reader follows too
        nodes = [*nodes, *(child for node in tree.body if isinstance(node, ast.If) for child in node.body)]
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def graph(*, module_level_only: bool) -> dict[str, set[str]]:
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts]
    modules = {module_name(path): path for path in files}
    return {
        name: {target for target in imports_of(path, module_level_only=module_level_only) if target in modules}
        for name, path in modules.items()
    }


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_no_import_circle() -> None:
    edges = {
        name: {t for t in targets if not name.startswith(f"{t}.")}
        for name, targets in graph(module_level_only=True).items()
    }
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        assert module not in visiting, " -> ".join([*path, module])
        if module in done:
            return
        visiting.add(module)
        for target in sorted(edges.get(module, ())):
            visit(target, [*path, module])
        visiting.discard(module)
        done.add(module)

    for module in sorted(edges):
        visit(module, [])


def sdk_core(module: str) -> bool:
    return within(module, "sportsproxy") and not any(
        within(module, f"sportsproxy.{layer}") for layer in ("django", "sandbox")
    )


def test_the_arrows_point_one_way() -> None:
    every_import = graph(module_level_only=False)
    for module, targets in every_import.items():
        for target in targets:
            if not within(module, "config"):
                assert not within(target, "config"), f"{module} imports {target}: nothing knows the site or its apps"
            if sdk_core(module):
                assert sdk_core(target), f"{module} imports {target}: the SDK core knows no Django and no sandbox"
            if within(module, "mintroute") or within(module, "sportsproxy.django"):
                assert not within(target, "sportsproxy.sandbox"), (
                    f"{module} imports {target}: the sandbox registers its transport with the glue, never the reverse"
                )
            if within(module, "sportsproxy"):
                assert not within(target, "mintroute"), f"{module} imports {target}: the SDK knows no mint route"


def test_the_route_builds_its_errors_in_errors_py() -> None:
    """A rule module imports the refusals from mintroute.errors, never a builder from a sibling."""
    every_import = graph(module_level_only=False)
    assert "mintroute.minting.misconfigured" not in every_import["mintroute.admission"]
    assert "mintroute.minting" not in every_import["mintroute.admission"]


def test_helpers_shared_across_packages_are_the_services_rules() -> None:
    """What another package imports from the SDK client is its public surface (sportsproxy.__all__);
    the rules shared by the client, the glue and the route live in sportsproxy.service."""
    import sportsproxy

    public = {f"sportsproxy.client.{name}" for name in sportsproxy.__all__}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if module_name(path) in ("sportsproxy.client", "sportsproxy.realtime"):
                continue
            for target in imports_of(path, module_level_only=False):
                if target.startswith("sportsproxy.client."):
                    assert target in public, f"{path.name} imports {target}: name it in sportsproxy.service"


# --- inside the sandbox: the parts (sub-packages) and the arrows between them ----------------------

SANDBOX = "sportsproxy.sandbox"
# Each part, and the other parts it may import. Every part may also import the shared modules.
SANDBOX_PARTS: dict[str, set[str]] = {
    "accounts": set(),
    "matches": set(),
    "rpc": {"accounts", "matches"},
    "realtime": {"rpc", "accounts", "matches"},
}
# The app's modules every part uses; they import none of the parts.
SANDBOX_SHARED = {"clock", "conf", "errors", "models"}
# What plugs the parts into Django (or serves them alone); no part or shared module imports these.
SANDBOX_WIRING = {"__main__", "admin", "apps", "checks", "management", "routing", "standalone", "urls"}


def sandbox_place(module: str) -> str:
    """Where a sandbox module sits: its sub-package or module under sportsproxy.sandbox ("" for the package)."""
    return module.removeprefix(SANDBOX).removeprefix(".").split(".")[0]


def sandbox_arrow_refusal(module: str, target: str) -> str | None:
    """Why `module` may not import `target` (both in the sandbox), or None when it may."""
    place, target_place = sandbox_place(module), sandbox_place(target)
    if target_place in ("", place):
        return None
    if target_place in SANDBOX_WIRING and place not in SANDBOX_WIRING:
        return "only the wiring (Django's entry points, the standalone server) imports the wiring"
    if place in SANDBOX_SHARED and target_place not in SANDBOX_SHARED:
        return "the shared modules import none of the parts"
    if place in SANDBOX_PARTS and target_place not in SANDBOX_SHARED | SANDBOX_PARTS[place]:
        allowed = ", ".join(sorted(SANDBOX_PARTS[place])) or "no other part"
        return f"{place} may import the shared modules and {allowed}"
    return None


def test_every_sandbox_module_has_a_place_on_the_map() -> None:
    places = {sandbox_place(module) for module in graph(module_level_only=False) if within(module, SANDBOX)}
    known = {"", *SANDBOX_PARTS, *SANDBOX_SHARED, *SANDBOX_WIRING}
    assert places - known == set(), "a new sandbox module: put it in a part, and the part in SANDBOX_PARTS"
    assert known - places == set(), "the map names a module or part that no longer exists"


def test_the_sandbox_parts_point_one_way() -> None:
    refusals = [
        f"{module} imports {target}: {refusal}"
        for module, targets in graph(module_level_only=False).items()
        if within(module, SANDBOX)
        for target in sorted(targets)
        if within(target, SANDBOX) and (refusal := sandbox_arrow_refusal(module, target))
    ]
    assert refusals == []


def test_the_sandbox_map_refuses_an_arrow_the_wrong_way() -> None:
    """The rule above reads the table, so it cannot pass by allowing everything."""
    assert sandbox_arrow_refusal(f"{SANDBOX}.rpc.dispatch", f"{SANDBOX}.accounts.quota") is None
    assert sandbox_arrow_refusal(f"{SANDBOX}.accounts.keys", f"{SANDBOX}.errors") is None
    assert sandbox_arrow_refusal(f"{SANDBOX}.accounts.keys", f"{SANDBOX}.rpc.methods") is not None
    assert sandbox_arrow_refusal(f"{SANDBOX}.matches.simulation", f"{SANDBOX}.realtime.fanout") is not None
    assert sandbox_arrow_refusal(f"{SANDBOX}.conf", f"{SANDBOX}.accounts.slots") is not None
    assert sandbox_arrow_refusal(f"{SANDBOX}.realtime.consumers", f"{SANDBOX}.routing") is not None
    assert sandbox_arrow_refusal(f"{SANDBOX}.standalone.asgi", f"{SANDBOX}.routing") is None


def modules_imported(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (inside functions too), by its full name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_parts_speak_http_through_httpx2_never_httpx_or_httpcore() -> None:
    """httpx2 is httpx's maintained continuation; the parts must not pull in the stalled httpx, or its core."""
    stale = {
        f"{path.relative_to(ROOT)}: {module}"
        for package in ("mintroute", "sportsproxy")
        for path in (ROOT / package).rglob("*.py")
        for module in modules_imported(path)
        if module.split(".")[0] in ("httpx", "httpcore")
    }
    assert stale == set()
    assert "httpx2" in modules_imported(ROOT / "sportsproxy" / "client.py")


def test_the_glues_secret_rules_know_no_django() -> None:
    # So they hold on every Django the parts support, and are tested as the SDK core's are, on any one of them.
    imported = modules_imported(ROOT / "sportsproxy" / "django" / "secrets.py")
    assert [module for module in imported if module.split(".")[0] == "django"] == []
