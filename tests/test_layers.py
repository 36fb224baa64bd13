"""Who may import whom: the layers of the README's architecture section, checked.

Every import in the package, including imports inside functions and under TYPE_CHECKING,
is an edge between the top-level parts (``board``, ``meters``, ``control``...). A part may
import only the parts listed for it here, and the parts have no import cycles inside.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest_edgeenergy

PACKAGE = Path(pytest_edgeenergy.__file__).parent
# Leaves: imported by anyone, import nothing of ours but errors.
BASE = {"(pkg)", "errors", "words", "extras", "knobs_text", "safefs", "ranges"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "words": set(),
    "extras": {"errors"},
    "safefs": {"errors"},
    "ranges": {"errors"},
    "knobs_text": {"errors", "words"},
    "board": BASE,
    "sim": BASE | {"board"},
    "meters": BASE | {"board"},
    "control": BASE | {"board"},
    "report": BASE | {"board", "meters"},
    "bench": BASE | {"board", "meters", "control", "report"},
    "search": BASE | {"board", "control", "report"},
    "workloads": BASE | {"bench"},
    "plugin": BASE | {"board", "sim", "meters", "control", "report", "bench", "search"},
    "ab": BASE | {"board", "sim", "control", "report", "bench"},
    "cli": BASE
    | {"board", "sim", "meters", "control", "report", "bench", "search", "plugin", "ab"},
}


def _module_name(path: Path) -> tuple[str, str]:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    is_init = parts[-1] == "__init__"
    if is_init:
        parts.pop()
    module = ".".join(parts)
    package = module if is_init else module.rsplit(".", 1)[0]
    return module, package


def _imports(path: Path) -> set[str]:
    _, package = _module_name(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module:
                found.add(target)
            else:  # `from . import x`: x is a module or a name of the package
                found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {t for t in found if t.split(".")[0] == "pytest_edgeenergy"}


PARTS = {p.stem for p in PACKAGE.glob("*.py")} | {
    p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
}


def _part(module: str) -> str:
    """``board`` for ``pytest_edgeenergy.board.rails``; ``(pkg)`` for the package's names."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PARTS else "(pkg)"


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module, _ = _module_name(path)
        graph[module] |= _imports(path)
    return graph


def test_every_part_is_known() -> None:
    parts = {_part(m) for m in _graph()} - {"(pkg)", "__main__"}
    assert parts <= set(ALLOWED), f"add these parts to ALLOWED: {parts - set(ALLOWED)}"


def test_parts_import_only_the_layers_below() -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if _part(target) != _part(module)
        and _part(module) in ALLOWED
        and _part(target) not in ALLOWED[_part(module)]
    )
    assert wrong == []


def test_no_import_cycles_between_modules() -> None:
    graph = _graph()
    modules = set(graph)

    # Edges to a package resolve to its __init__ (same name); to a name in a module, to it.
    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    edges = {m: {r for t in ts if (r := resolve(t)) and r != m} for m, ts in graph.items()}
    # A package's __init__ importing its own submodules is not a cycle we care about.
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycles.append([*stack[stack.index(t) :], t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert cycles == [], " | ".join(" -> ".join(c) for c in cycles)
