"""Doubtful figures are said, in the terminal summary and in the report's ``warnings``:
frozen readings of a virtual board nothing animates, an idle baseline that was not idle
(its spread, or net energy below zero); and the summary's count of ``edge_bench`` tests
matches the benchmark table (issue 19, part 7)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from wrapped_text import unwrapped_lines

from pytest_edgeenergy.run import EnergySession
from pytest_edgeenergy.run.warnings import IDLE_SPREAD_MAX, run_warnings
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create

RUN_TIMEOUT_S = 180.0
FLAGS = ("-s", "-p", "no:cacheprovider", "-p", "no:randomly")

WINDOW = """
import time


def test_window(energy):
    with energy.window("work"):
        time.sleep(0.3)
"""


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, object]]:
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *args, "--edge-idle-s=0.3", f"--edge-report={report}", *FLAGS, timeout=RUN_TIMEOUT_S
    )
    data: dict[str, object] = json.loads(report.read_text()) if report.exists() else {}
    return result, data


def _warnings(data: dict[str, object], kind: str) -> list[dict[str, str]]:
    warnings = data.get("warnings") or []
    assert isinstance(warnings, list)
    return [w for w in warnings if w["kind"] == kind]


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return create("orin-nano", tmp_path / "board")


def test_a_tree_nothing_animates_is_said_frozen(pytester: pytest.Pytester, board: Path) -> None:
    pytester.makepyfile(test_inner=WINDOW)
    result, data = _run(pytester, f"--edge-root={board}")
    result.assert_outcomes(passed=1)
    [frozen] = _warnings(data, "frozen_readings")
    assert f"edgeenergy sim run {board}" in frozen["message"]
    unwrapped_lines(result.outlines).fnmatch_lines(
        ["WARNING: *was not animated during the measurement*"]
    )


def test_an_animated_tree_is_not_said_frozen(pytester: pytest.Pytester, board: Path) -> None:
    (board / LOAD_OVERRIDE).write_text("0.5\n")
    pytester.makepyfile(test_inner=WINDOW)
    with SimProcess(board):
        result, data = _run(pytester, f"--edge-root={board}")
    result.assert_outcomes(passed=1)
    assert _warnings(data, "frozen_readings") == []
    assert "not animated" not in result.stdout.str()


NEGATIVE = """
import time
from pathlib import Path


def test_quieter_than_idle(energy):
    Path({override!r}).write_text("0\\n")  # idle was measured at full load
    time.sleep(0.5)  # the animator picks it up within a few ticks
    with energy.window("quiet") as w:
        time.sleep(0.3)
    assert w.result.net_energy_j < 0
"""


def test_net_energy_below_zero_flags_the_idle_baseline(
    pytester: pytest.Pytester, board: Path
) -> None:
    override = board / LOAD_OVERRIDE
    override.write_text("1\n")
    pytester.makepyfile(test_inner=NEGATIVE.format(override=str(override)))
    with SimProcess(board):
        result, data = _run(pytester, f"--edge-root={board}")
    result.assert_outcomes(passed=1)
    assert _warnings(data, "negative_net_energy")
    unwrapped_lines(result.outlines).fnmatch_lines(
        ["WARNING: 1 window of 1 had net energy below zero*test_quieter_than_idle 'quiet'*"]
    )


@pytest.fixture
def toggled_idle(board: Path) -> Iterator[EnergySession]:
    """A session whose idle baseline was measured while the board's load kept swinging
    between none and full (an animated tree, its load pinned by turns)."""
    override = board / LOAD_OVERRIDE
    override.write_text("0\n")
    stop = threading.Event()

    def toggle() -> None:
        level = 0
        while not stop.wait(0.05):
            level ^= 1
            override.write_text(f"{level}\n")

    es = EnergySession(board, report=board.parent / "r.json", interval_s=0.01, idle_s=1.0)
    with SimProcess(board):
        thread = threading.Thread(target=toggle)
        thread.start()
        try:
            es.open()
        finally:
            stop.set()
            thread.join()
        try:
            yield es
        finally:
            es.close()


def test_an_idle_baseline_that_swings_is_not_idle(toggled_idle: EnergySession) -> None:
    idle = toggled_idle.idle
    assert idle is not None and idle.power_w is not None and idle.spread_w is not None
    assert idle.spread_w > IDLE_SPREAD_MAX * idle.power_w
    [warning] = [w for w in run_warnings(toggled_idle) if w["kind"] == "idle_not_idle"]
    assert "the idle baseline was not idle" in warning["message"]
    assert "standard deviation" in warning["message"]


def test_a_steady_idle_baseline_is_idle(board: Path) -> None:
    (board / LOAD_OVERRIDE).write_text("0\n")
    es = EnergySession(board, report=board.parent / "r.json", interval_s=0.01, idle_s=0.5)
    with SimProcess(board):
        es.open()
        try:
            idle = es.idle
            assert idle is not None and idle.spread_w is not None and idle.power_w is not None
            assert idle.spread_w < IDLE_SPREAD_MAX * idle.power_w
            assert [w for w in run_warnings(es) if w["kind"] == "idle_not_idle"] == []
        finally:
            es.close()


PREFLIGHT = """
import pytest


@pytest.mark.parametrize("n", [1, 2, 3])
def test_too_big(edge_bench, n):
    edge_bench.preflight(estimate_bytes=2**50, what=f"huge {n}")


def test_runs(edge_bench, request):
    if request.config.getoption("--runs-too"):
        edge_bench.run(lambda: sum(range(1000)), items_per_call=1, items=1, repeats=1)
"""
CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--runs-too", action="store_true")
"""


@pytest.mark.parametrize("runs_too", [False, True])
def test_the_edge_bench_count_matches_the_table(pytester: pytest.Pytester, runs_too: bool) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=PREFLIGHT)
    extra = ("--runs-too",) if runs_too else ()
    result, _ = _run(pytester, "--edge-board=sim:orin-nano", "--edge-min-window-s=0.1", *extra)
    result.assert_outcomes(skipped=3, passed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["3 tests skipped before measuring (reasons: pytest -rs)"])
    if runs_too:
        result.stdout.fnmatch_lines(
            [
                "1 test measured with edge_bench: 1 run, one row in the benchmark table below",
                "*energy benchmarks*",
            ]
        )
    else:
        assert "measured with edge_bench" not in out and "energy benchmarks" not in out
