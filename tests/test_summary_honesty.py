"""The terminal summary tells the truth (issue 20, section 2, "Summary honesty"): a load
scenario's missed deadlines are in its benchmark row, not only in the progress lines, and
every count printed agrees with pytest's own counts and with the tables shown: the order
line counts the tests left after ``-k``, the count lines add up to what pytest reports and
to the rows of the tables, and no line points at a table that is not printed."""

from __future__ import annotations

import json
import os
import re

import pytest

FLAGS = (
    "--edge-board=sim:orin-nano",
    "--edge-idle-s=0",
    "--edge-sim-load=0.4",
    "--edge-warmup=1",
    "--edge-repeats=2",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
)
RUN_TIMEOUT_S = 240.0


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, object]]:
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *FLAGS, f"--edge-report={report}", *args, timeout=RUN_TIMEOUT_S
    )
    data: dict[str, object] = json.loads(report.read_text()) if report.exists() else {}
    return result, data


def _section(out: str, title: str) -> list[str]:
    """The lines under the ``=== title ===`` separator, up to the next separator."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"^=+ {re.escape(title)}", line))
    rest = lines[start + 1 :]
    end = next((i for i, line in enumerate(rest) if re.match(r"^=+ .* =+$", line)), len(rest))
    return rest[:end]


# -- deadlines in the benchmark row ---------------------------------------------------------

STREAMS = """
import time

from pytest_edgeenergy.bench.scenarios import Scenario


def test_streams(edge_bench):
    # 4 queries/s: a 300 ms query misses every 250 ms deadline, a 5 ms one meets them all
    # unless woken 245 ms late (a busy host's latest wake-up seen: 0.22 s).
    slow = Scenario("fixed-rate", 4.0)
    edge_bench.run(lambda: time.sleep(0.3), items_per_call=1, label="slow", scenario=slow)
    edge_bench.run(lambda: time.sleep(0.005), items_per_call=1, label="fast", scenario=slow)
    edge_bench.run(lambda: time.sleep(0.005), items_per_call=1, label="offline")
"""


def test_a_stream_that_missed_every_deadline_says_so_in_its_row(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_inner=STREAMS)
    result, data = _run(pytester, "--edge-items=3", "--edge-min-window-s=0")
    assert result.ret == 0, result.stdout.str()
    rows = _section(result.stdout.str(), "energy benchmarks")
    (slow,) = [r for r in rows if "[slow]" in r]
    (fast,) = [r for r in rows if "[fast]" in r]
    (offline,) = [r for r in rows if "[offline]" in r]
    # Every query of both repeats was late: the row says how many, and that it was not met.
    (test,) = data["tests"]  # type: ignore[index]
    slow_run = test["extra"]["runs"][0]  # type: ignore[index]
    queries = 2 * slow_run["calls_per_repeat"]
    assert slow_run["scenario"]["deadline_misses"] == [queries // 2] * 2
    assert slow.endswith(f"valid; deadline 250 ms: {queries}/{queries} queries late (NOT MET)")
    assert re.search(r"valid; deadline 250 ms: 0/\d+ queries late$", fast)
    # Offline has no deadline: nothing added.
    assert offline.endswith("  valid")


# -- counts that add up ----------------------------------------------------------------------

MIXED = """
import time

import pytest


def test_plain():
    pass


@pytest.mark.parametrize("n", ["kept1", "kept2", "dropped"])
def test_bench(edge_bench, operating_point, n):
    edge_bench.run(lambda: time.sleep(0.002), items_per_call=1)


def test_two_runs(edge_bench, operating_point):
    edge_bench.run(lambda: time.sleep(0.002), items_per_call=1, label="prefill")
    edge_bench.run(lambda: time.sleep(0.002), items_per_call=1, label="decode")


def test_window_then_skip(energy):
    with energy.window("load"):
        time.sleep(0.2)
    pytest.skip("the export failed after loading")


def test_skip_first(edge_bench, operating_point):
    pytest.skip("no GPU here")


def test_too_big(edge_bench, operating_point):
    edge_bench.preflight(estimate_bytes=2**50, what="a huge model")


def test_window(energy):
    with energy.window("work"):
        time.sleep(0.2)


def test_pinned_only(operating_point):
    pass
"""


def test_every_count_agrees_with_pytest_and_the_tables(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=MIXED)
    result, _ = _run(
        pytester,
        "--power-mode=15W",
        "--edge-items=4",
        "--edge-min-window-s=0.1",
        "-k",
        "not dropped",
    )
    outcomes = result.parseoutcomes()
    assert (outcomes["passed"], outcomes["skipped"], outcomes["deselected"]) == (6, 3, 1)
    out = result.stdout.str()
    # The order line counts what runs after -k: 6 pinned tests of the 9 selected.
    result.stdout.fnmatch_lines(["collected 10 items / 1 deselected / 9 selected"])
    assert (
        "edgeenergy: 6 of 9 selected tests over 1 operating point, 0 knob changes; order: 15W"
        in out
    )
    energy = _section(out, "energy (SIMULATED: virtual board)")
    benchmarks = _section(out, "energy benchmarks (SIMULATED)")
    bench_rows = benchmarks[1:]  # under the header
    assert len(bench_rows) == 4  # kept1, kept2, prefill, decode
    # The 8 tests that used the board (not test_plain): 5 passed, 3 skipped, as pytest counts.
    assert (
        "8 tests used the board (energy, edge_bench or operating_point): 5 passed, 3 skipped"
        in energy
    )
    assert (
        "3 tests measured with edge_bench: 4 runs, one row each in the benchmark table below"
        in energy
    )
    assert (
        "2 tests measured in energy windows: 2 windows, one row each in the table above "
        "(1 then skipped)" in energy
    )
    assert "2 tests skipped before measuring (reasons: pytest -rs)" in energy
    # 3 + 2 + 2 = 1 short of 8: test_pinned_only passed having measured nothing.
    assert "1 test measured nothing (passed): one row in the table above" in energy
    table_rows = [r.split()[:2] for r in energy if r.startswith("test_inner.py::")]
    assert table_rows == [
        ["test_inner.py::test_window_then_skip", "load"],
        ["test_inner.py::test_window", "work"],
        ["test_inner.py::test_pinned_only[15W]", "-"],
    ]


def test_no_line_points_at_a_table_that_is_not_printed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner="""
import pytest


@pytest.mark.parametrize("n", [1, 2])
def test_too_big(edge_bench, n):
    edge_bench.preflight(estimate_bytes=2**50, what=f"huge {n}")
    pytest.skip("refused by the memory pre-flight")
"""
    )
    result, _ = _run(pytester)
    result.assert_outcomes(skipped=2)
    out = result.stdout.str()
    assert "energy benchmarks" not in out
    assert "table below" not in out and "table above" not in out
    energy = _section(out, "energy (SIMULATED: virtual board)")
    assert "2 tests used the board (energy, edge_bench or operating_point): 2 skipped" in energy
    assert "2 tests skipped before measuring (reasons: pytest -rs)" in energy
