"""The arrows between the parts point one way, and no module imports itself back in a circle.

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
    at_module_level = graph(module_level_only=True)
    for module, targets in every_import.items():
        for target in targets:
            if not within(module, "config"):
                assert not within(target, "config"), f"{module} imports {target}: nothing knows the site or the demo"
            if sdk_core(module):
                assert sdk_core(target), f"{module} imports {target}: the SDK core knows no Django and no sandbox"
            if within(module, "mintroute") or within(module, "sportsproxy.django"):
                assert not within(target, "sportsproxy.sandbox") or (
                    module == "sportsproxy.django.shared" and target not in at_module_level[module]
                ), f"{module} imports {target}: the glue reaches the sandbox only when it is selected"
            if within(module, "sportsproxy"):
                assert not within(target, "mintroute"), f"{module} imports {target}: the SDK knows no mint route"
