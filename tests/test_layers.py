"""Who may import whom: the layer table of the manual's architecture page, checked.

The table in ``docs/explanation/architecture.md`` is the one place the layers are written:
this test reads it (part, what it owns, what it may import) and checks every import in the
package against it, imports inside functions and under TYPE_CHECKING included. A part may
import only the parts its row lists ("the leaves": every leaf row, those that do not say
"the leaves" themselves), and the modules have no import cycles.

An import is counted as the module it reaches: ``from pytest_edgeenergy import plugin`` and
``from .. import plugin`` import the part ``plugin`` (not the package), and a name the
package's ``__init__`` re-exports (``from pytest_edgeenergy import EnergySession``) is
counted as the module it comes from.

The rooms' own rules are checked here too: commands only in ``commands/`` (no other module
parses a command line or has a ``main``, bar the listed exceptions; the console script
points into ``commands/``), and no part but the ``python -m`` entries imports ``commands``
(the plugin never does).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from importlib import import_module
from pathlib import Path

import pytest

import pytest_edgeenergy

PACKAGE = Path(pytest_edgeenergy.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "explanation" / "architecture.md"
ROOT = "(pkg)"
"""The part of the package's ``__init__`` and of the names defined there."""
MAIN = "__main__"
"""The part of every ``__main__.py`` (a ``python -m`` entry), whatever its folder."""
LEAVES_WORDS = "the leaves"


# -- the table --------------------------------------------------------------------------------


def _cell_parts(cell: str) -> set[str]:
    """``board`` for `` `board/` ``, ``cli`` for `` `cli.py` ``, (pkg) for `` `__init__.py` ``."""
    found = set()
    for name in re.findall(r"`([^`]+)`", cell):
        name = name.removesuffix("/").removesuffix(".py")
        found.add(ROOT if name == "__init__" else name)
    return found


def read_table(text: str) -> dict[str, set[str]]:
    """Each part's allowed imports, from the markdown table whose header is
    ``| part | owns | may import |``."""
    lines = text.splitlines()
    start = next(
        i
        for i, line in enumerate(lines)
        if [c.strip() for c in line.strip().strip("|").split("|")] == ["part", "owns", "may import"]
    )
    rows: list[tuple[set[str], set[str], bool]] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip().strip("|").split("|")
        assert len(cells) == 3, f"architecture table row without 3 cells: {line}"
        rows.append((_cell_parts(cells[0]), _cell_parts(cells[2]), LEAVES_WORDS in cells[2]))
    leaves = {part for parts, _, above in rows if not above for part in parts}
    allowed: dict[str, set[str]] = {}
    for parts, imports, above in rows:
        for part in parts:
            assert part not in allowed, f"{part} has two rows in the architecture table"
            allowed[part] = imports | (leaves if above else set())
    return allowed


ALLOWED = read_table(ARCHITECTURE.read_text(encoding="utf-8"))


# -- the imports --------------------------------------------------------------------------------


def _module_name(path: Path) -> tuple[str, str]:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    is_init = parts[-1] == "__init__"
    if is_init:
        parts.pop()
    module = ".".join(parts)
    package = module if is_init else module.rsplit(".", 1)[0]
    return module, package


PARTS = {p.stem for p in PACKAGE.glob("*.py")} | {
    p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
}


def _reexports() -> dict[str, str]:
    """Names the package's ``__init__`` imports (lazily too) -> the module they come from."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            base = "pytest_edgeenergy" if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            found.update({alias.asname or alias.name: module for alias in node.names})
    return found


REEXPORTS = _reexports()


def imports_of(source: str, module: str, package: str) -> set[str]:
    """The modules of ours that ``source`` (the text of ``module`` in ``package``) imports.

    ``from X import name`` reaches ``X.name`` when that is a part or a module (it may be a
    submodule), else ``X``; from the package itself, a re-exported name reaches the module
    it comes from."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            for alias in node.names:
                if target == "pytest_edgeenergy" and alias.name in REEXPORTS:
                    found.add(REEXPORTS[alias.name])
                else:
                    found.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {t for t in found if t.split(".")[0] == "pytest_edgeenergy"}


def _imports(path: Path) -> set[str]:
    module, package = _module_name(path)
    return imports_of(path.read_text(), module, package)


def _part(module: str) -> str:
    """``board`` for ``pytest_edgeenergy.board.rails``; (pkg) for the package's own names;
    ``__main__`` for ``pytest_edgeenergy.sim.__main__``."""
    parts = module.split(".")
    if parts[-1] == MAIN:
        return MAIN
    return parts[1] if len(parts) > 1 and parts[1] in PARTS else ROOT


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module, _ = _module_name(path)
        graph[module] |= _imports(path)
    return graph


def wrong_imports(graph: dict[str, set[str]]) -> list[str]:
    """``a imports b`` for every import the table does not allow."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if _part(target) != _part(module)
        and _part(target) != ROOT  # the package itself (its __init__ defines no name of its own)
        and _part(target) not in ALLOWED.get(_part(module), set())
    )


# -- the tests ----------------------------------------------------------------------------------


def test_every_part_is_in_the_table_and_every_row_is_a_part() -> None:
    parts = {_part(m) for m in _graph()}
    assert parts <= set(ALLOWED), f"add rows to {ARCHITECTURE.name}: {parts - set(ALLOWED)}"
    stale = set(ALLOWED) - parts
    assert not stale, f"rows of {ARCHITECTURE.name} name no part of the package: {stale}"
    named = {p for imports in ALLOWED.values() for p in imports}
    assert named <= set(ALLOWED), f"may-import names without a row: {named - set(ALLOWED)}"


def test_parts_import_only_the_layers_below() -> None:
    assert wrong_imports(_graph()) == []


UPWARD = [
    "from pytest_edgeenergy import plugin",
    "from pytest_edgeenergy import cli, plugin",
    "from .. import plugin",
    "import pytest_edgeenergy.plugin",
    "import pytest_edgeenergy.plugin.options as options",
    "from pytest_edgeenergy.plugin import options",
    "from ..plugin.options import Option",
    "def later():\n    from pytest_edgeenergy import plugin",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pytest_edgeenergy import plugin",
]


@pytest.mark.parametrize("line", UPWARD)
def test_an_upward_import_in_board_fails(line: str) -> None:
    """The hole of issue 21: an absolute ``from pkg import sub`` was counted as the package
    itself. A copy of ``board/types.py`` with one upward import appended is refused."""
    path = PACKAGE / "board" / "types.py"
    module, package = _module_name(path)
    source = path.read_text() + "\n" + line + "\n"
    graph = {**_graph(), module: imports_of(source, module, package)}
    wrong = wrong_imports(graph)
    assert any(w.startswith(f"{module} imports pytest_edgeenergy.plugin") for w in wrong), wrong


def test_a_reexported_name_counts_as_its_module() -> None:
    """``EnergySession`` from the package is the run layer: not for ``board``."""
    path = PACKAGE / "board" / "types.py"
    module, package = _module_name(path)
    source = path.read_text() + "\nfrom pytest_edgeenergy import EnergySession\n"
    assert REEXPORTS.get("EnergySession", "").startswith("pytest_edgeenergy.run")
    graph = {**_graph(), module: imports_of(source, module, package)}
    assert any(
        w.startswith(f"{module} imports pytest_edgeenergy.run") for w in wrong_imports(graph)
    )
    version = path.read_text() + "\nfrom pytest_edgeenergy import __version__\n"
    graph[module] = imports_of(version, module, package)
    assert wrong_imports(graph) == []


def test_the_table_is_read_as_written() -> None:
    """The reader of the manual's table: leaves, 'the leaves', file and folder names."""
    table = read_table(
        "| part | owns | may import |\n|---|---|---|\n"
        "| `errors`, `words` | roots | nothing |\n"
        "| `ranges` | ranges | `errors` |\n"
        "| `board/` | boards | the leaves |\n"
        "| `cli.py` | the command | the leaves, `board` |\n"
        "| `__init__.py` | names | the leaves |\n"
        "\nafter the table\n"
    )
    leaves = {"errors", "words", "ranges"}
    assert table == {
        "errors": set(),
        "words": set(),
        "ranges": {"errors"},
        "board": leaves,
        "cli": leaves | {"board"},
        ROOT: leaves,
    }


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


# -- commands only in commands/ --------------------------------------------------------------

PARSES_ARGUMENTS = {
    "pytest_edgeenergy.options_spec": "every shared option described once: add_arguments adds "
    "them to a command's parser",
    "pytest_edgeenergy.ranges": "the numeric options' allowed ranges as argparse types",
    "pytest_edgeenergy.sim.shims": "the virtual board's nvpmodel, jetson_clocks and tegrastats: "
    "NVIDIA's own command lines, not edgeenergy's",
    "pytest_edgeenergy.bench.workload_worker": "the workload worker: a standard-library script "
    "sent to another interpreter or a container and run there, imported by nothing",
}
"""Modules outside ``commands/`` that may import argparse or have a ``main``, and why."""


def _modules() -> dict[str, ast.Module]:
    return {_module_name(path)[0]: ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")}


def _entries(tree: ast.Module) -> list[str]:
    """What makes a module a command line: argparse imported, a top-level ``main`` or
    ``*_main`` function, an ``if __name__ == "__main__"`` block."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        if "argparse" in names:
            found.append("imports argparse")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.rpartition("_")[2] == "main":
            found.append(f"defines {node.name}()")
        elif isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            found.append("runs as a script")
    return found


def test_commands_only_in_commands() -> None:
    """No module outside ``commands/`` parses a command line or is an entry point of its
    own (``python -m`` entries are ``__main__.py`` shims calling ``commands``), bar
    :data:`PARSES_ARGUMENTS`."""
    wrong = sorted(
        f"{module}: {what}"
        for module, tree in _modules().items()
        if _part(module) not in ("commands", MAIN) and module not in PARSES_ARGUMENTS
        for what in _entries(tree)
    )
    assert wrong == [], "move these into commands/ (or say why in PARSES_ARGUMENTS): " + str(wrong)
    stray = sorted(p.name for p in PACKAGE.rglob("*cli.py"))
    assert stray == [], f"a command's module belongs in commands/: {stray}"


def test_a_parser_outside_commands_is_refused() -> None:
    """The check above sees argparse, a ``*_main`` and a script block in any other room."""
    tree = ast.parse(
        "import argparse\n\ndef history_main(argv):\n    pass\n\n"
        "if __name__ == '__main__':\n    history_main(None)\n"
    )
    assert _entries(tree) == ["imports argparse", "defines history_main()", "runs as a script"]


def test_only_the_python_m_entries_import_commands() -> None:
    """The plugin (and every room but ``commands/`` itself) never imports ``commands``,
    whatever the table says; the ``python -m`` entries are thin shims over it."""
    importers = sorted(part for part, allowed in ALLOWED.items() if "commands" in allowed)
    assert importers == [MAIN]
    assert "commands" not in ALLOWED["plugin"]
    mains = sorted(m for m in _graph() if _part(m) == MAIN)
    assert mains == ["pytest_edgeenergy.commands.__main__", "pytest_edgeenergy.sim.__main__"]


def test_the_console_script_points_into_commands() -> None:
    """``edgeenergy`` is ``commands.main``, and it exists."""
    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    section = text.partition("\n[project.scripts]\n")[2].partition("\n[")[0]
    scripts = dict(re.findall(r'^(\S+) = "([^"]+)"', section, re.MULTILINE))
    assert scripts == {"edgeenergy": "pytest_edgeenergy.commands:main"}
    module, _, name = scripts["edgeenergy"].partition(":")
    assert callable(getattr(import_module(module), name))
