"""The workload worker stays a Python 3.6 standard-library script: compiled by each old
interpreter here, linted by ruff at its oldest target, importing nothing of this package and
no third-party module but inside its builders."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from worker_pythons import OLD_VERSIONS, old_python

from pytest_edgeenergy.bench.worker import WORKER_SOURCE

REPO = Path(__file__).resolve().parents[1]
STDLIB_36 = {
    "array",
    "base64",
    "gc",
    "importlib",
    "json",
    "os",
    "platform",
    "random",
    "shutil",
    "sys",
    "tempfile",
    "time",
    "traceback",
    "zlib",
}
"""What the worker may import at its top: modules Python 3.6's standard library has."""
INSIDE_BUILDERS = {"torch", "torchvision", "transformers", "PIL"}


def _compile_with(python: Path, source: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')"
    return subprocess.run(
        [str(python), "-c", code, str(source)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_each_old_python_compiles_the_worker(version: str) -> None:
    done = _compile_with(old_python(version), WORKER_SOURCE)
    assert done.returncode == 0, done.stderr


def test_python36_refuses_what_36_lacks(tmp_path: Path) -> None:
    """The compile check is a real gate: a 3.8 f-string in a copy fails under 3.6."""
    copy = tmp_path / "worker.py"
    copy.write_text(WORKER_SOURCE.read_text() + '\nx = 1\nprint(f"{x=}")\n')
    done = _compile_with(old_python("3.6"), copy)
    assert done.returncode != 0 and "SyntaxError" in done.stderr


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (pip install -e .[lint])")
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_ruff_lints_the_worker_at_its_own_target(tmp_path: Path) -> None:
    """The project's lint (``make lint``) checks the worker with target py37 (ruff's
    oldest): syntax newer than that is an error there, as for a copy with a walrus."""
    rel = WORKER_SOURCE.relative_to(REPO).as_posix()
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'per-file-target-version = {{ "{rel}" = "py37" }}' in pyproject
    done = _ruff(rel)
    assert done.returncode == 0, done.stdout
    copy = tmp_path / "worker.py"
    copy.write_text(WORKER_SOURCE.read_text() + "\nif (n := 1):\n    pass\n")
    done = _ruff("--isolated", "--target-version", "py37", "--select", "E", str(copy))
    assert done.returncode != 0
    assert "Cannot use named assignment expression" in done.stdout


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """``(top-level module, at the module's top)`` for each import of the worker."""
    found = []
    top = set(map(id, ast.iter_child_nodes(tree)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        found += [(n.split(".")[0], id(node) in top) for n in names]
    return found


def test_the_worker_imports_the_standard_library_at_its_top_only() -> None:
    imports = _imports(ast.parse(WORKER_SOURCE.read_text()))
    at_top = {name for name, top in imports if top}
    inside = {name for name, top in imports if not top}
    assert at_top <= STDLIB_36, at_top - STDLIB_36
    assert inside <= INSIDE_BUILDERS | STDLIB_36, inside
    assert not any(name == "pytest_edgeenergy" for name, _ in imports)
    assert "__future__" not in at_top  # `from __future__ import annotations` is 3.7+
    assert "dataclasses" not in at_top | inside  # 3.7+


def test_the_package_never_imports_the_worker() -> None:
    """It reaches other interpreters as text (``bench/worker.py`` reads it); importing it
    here would make it part of the package's import graph."""
    package = REPO / "pytest_edgeenergy"
    for path in package.rglob("*.py"):
        for name, _ in _imports(ast.parse(path.read_text())):
            assert name != "workload_worker", path
        text = path.read_text()
        assert "import workload_worker" not in text and ".workload_worker import" not in text
