"""The control layer's structure: one allow-list per detected board, knobs behind one
protocol, and no import cycle among the control modules."""

from __future__ import annotations

import ast
import gc
import inspect
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest
from test_control_knobs import GPU, make_board, read, tree_hash

import pytest_edgeenergy.control as control_pkg
import pytest_edgeenergy.control.knobset as knobset_module
from pytest_edgeenergy.board.detect import detect
from pytest_edgeenergy.board.nvpmodel import NvpmodelConfError
from pytest_edgeenergy.control.grid import expand
from pytest_edgeenergy.control.journal import DirectJournal
from pytest_edgeenergy.control.knobs import GpuKnob
from pytest_edgeenergy.control.knobset import knob_set, knobs_at
from pytest_edgeenergy.control.operating_point import (
    DVFS,
    OperatingPoint,
    Resolver,
    apply,
    check_drift,
    files_for,
    point_knobs,
    read_back,
    resolve,
    thermal_trips,
)
from pytest_edgeenergy.control.plan import PlanContext
from pytest_edgeenergy.control.residency import ResidencySampler
from pytest_edgeenergy.control.state import Session


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return make_board(tmp_path / "board")


def test_knob_set_is_built_from_the_board_it_is_given(board: Path) -> None:
    detected = detect(board)
    knobs = knob_set(detected)
    # No module-global cache: whoever opens the board builds its set once and hands it on.
    again = knob_set(detected)
    assert again is not knobs and again.files == knobs.files
    assert not hasattr(knobset_module, "_BUILT")
    assert knobs_at(board).files == knobs.files
    # Nothing keeps the board alive.
    ref = weakref.ref(detected)
    del detected
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize(
    "function",
    [
        Session,
        Resolver,
        resolve,
        apply,
        files_for,
        read_back,
        check_drift,
        thermal_trips,
        expand,
        ResidencySampler,
    ],
    ids=lambda f: f.__name__,
)
def test_control_takes_one_type_a_knob_set(function: Callable[..., object]) -> None:
    """No ``Board | KnobSet | Path``: a root path is never detected behind the caller's
    back (the old signatures took all three)."""
    annotations = [str(p.annotation) for p in inspect.signature(function).parameters.values()]
    assert "KnobSet" in annotations, annotations
    assert not any("Path" in a or "Board" in a for a in annotations if "KnobSet" in a)


def test_knob_set_uses_the_boards_descriptions(board: Path) -> None:
    detected = detect(board)
    knobs = knob_set(detected)
    assert knobs.gpu is detected.knobs.gpu
    assert knobs.policies == detected.knobs.cpufreq and knobs.cores == detected.knobs.cpu.cores
    assert knobs.emc is detected.knobs.emc and knobs.emc is not None


def test_broken_conf_error_comes_from_the_board_field(board: Path) -> None:
    (board / "etc/nvpmodel.conf").write_text("< POWER_MODEL ID=zero NAME=X >\n")
    detected = detect(board)
    knobs = knob_set(detected)
    assert knobs.nvpmodel_conf is None
    assert knobs.nvpmodel_conf_error == detected.nvpmodel_conf_error is not None
    with pytest.raises(NvpmodelConfError, match=r"nvpmodel\.conf:1:"):
        knobs.require_conf()


def test_files_for_is_the_union_of_the_knobs(board: Path) -> None:
    knobs = knobs_at(board)
    point = OperatingPoint(gpu_freq_hz=612000000, cpu_cores=2, emc_freq_hz=204000000)
    assert all(k.files_for(DVFS) == () for k in point_knobs(knobs))
    union = [p for k in point_knobs(knobs) for p in k.files_for(point)]
    assert files_for(point, knobs) == list(dict.fromkeys(union))
    assert [k.name for k in point_knobs(knobs)] == [
        "nvpmodel",
        "cpu-cores",
        "cpufreq",
        "gpu",
        "emc",
    ]


def test_direct_journal_is_the_same_as_no_session(board: Path) -> None:
    point = OperatingPoint(gpu_freq_hz=612000000, cpu_cores=3)
    knobs = knobs_at(board)
    result = apply(point, knobs, DirectJournal(knobs))
    assert result.ok and [s.knob for s in result.steps] == ["cpu-cores", "gpu", "gpu"]
    assert apply(point, knobs).steps == ()  # already pinned: nothing left to write


def test_restore_is_planning_with_the_knob_unpinned(board: Path) -> None:
    before = tree_hash(board)
    with Session(knobs_at(board)) as session:
        session.apply(OperatingPoint(gpu_freq_hz=612000000))
        assert read(board, f"{GPU}/max_freq") == "612000000"
        gpu = GpuKnob(session.knobs)
        steps = gpu.plan_point(DVFS, PlanContext(baseline=session.baseline()))
        assert {s.path.name for s in steps} == {"min_freq", "max_freq"}
        gpu.apply(steps, session.runner)
        assert gpu.verify() == []
        assert read(board, f"{GPU}/min_freq") == "306000000"
        assert read(board, f"{GPU}/max_freq") == "1020000000"
    assert tree_hash(board) == before


def _control_imports() -> dict[str, set[str]]:
    """Each control module's imports of other control modules (every import statement:
    module level, function level and TYPE_CHECKING alike)."""
    package = Path(control_pkg.__file__).parent
    names = {p.stem for p in package.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
        graph[path.stem] = {n for n in found if n in names and n != path.stem}
    return graph


def test_no_import_cycle_among_control_modules() -> None:
    graph = _control_imports()
    assert "state" not in graph["operating_point"]
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise AssertionError("import cycle: " + " -> ".join((*path, name)))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
