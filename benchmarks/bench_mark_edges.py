"""Where a window marked by a measured command begins and ends, against the command's own
clock (pytest-benchmark; not part of the test command).

A command run by ``edgeenergy measure -- CMD`` (the engine, :func:`~pytest_edgeenergy.run.
command.measure_command`, on a virtual Orin Nano) opens and closes 50 windows; right before
each mark it reads CLOCK_MONOTONIC itself (``time.monotonic_ns()``) and keeps the reading.
The figure is the distance from that reading to the window's edge in the report:

* stamped marks (the helper, ``edgeenergy_mark.begin/end``): the edge is the helper's
  stamp, taken a few µs after the command's own reading. Target: <= 1 ms.
* marks without a stamp (what a shell writes): the edge is the time the harness's reader
  thread read the line, so the figure is the reading's delay.

Each case runs on the machine as it is and beside four CPU-bound processes (``--load``
rounds: the condition the tests must survive). The median, p99 and largest distance are
printed and kept in ``extra_info``.

Run: ``pytest benchmarks/bench_mark_edges.py --benchmark-only -s``.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import statistics
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.run.command import measure_command
from pytest_edgeenergy.run.command_runs import CommandPlan
from pytest_edgeenergy.run.session import EnergySession

WINDOWS = 50
HELPER = Path(__file__).resolve().parents[1] / "pytest_edgeenergy" / "run" / "mark_helper.py"

COMMAND = """
import json, os, sys, time
sys.path.insert(0, {helper_dir!r})
import mark_helper as mark

stamped = sys.argv[1] == "stamped"
fd = None if stamped else os.open(os.environ["EDGEENERGY_MARK"], os.O_WRONLY)
own = []
for k in range({windows}):
    for verb in ("begin", "end"):
        t = time.monotonic_ns()
        own.append(t)
        if stamped:
            (mark.begin if verb == "begin" else mark.end)("w")
        else:
            os.write(fd, ("%s w\\n" % verb).encode())
        time.sleep(0.06 if verb == "begin" else 0.02)
with open(sys.argv[2], "w") as f:
    json.dump(own, f)
"""


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """``processes`` CPU-bound processes beside the body."""
    workers = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for w in workers:
        w.start()
    try:
        yield
    finally:
        for w in workers:
            w.kill()
            w.join()


def edge_distances_ms(tmp_path: Path, how: str) -> list[float]:
    """|report edge - the command's own reading| of every edge, ms."""
    script = tmp_path / "marks.py"
    script.write_text(
        textwrap.dedent(COMMAND).format(helper_dir=str(HELPER.parent), windows=WINDOWS)
    )
    own_file = tmp_path / f"own-{how}.json"
    plan = CommandPlan(
        argv=(sys.executable, str(script), how, str(own_file)), label="bench", runs=1
    )
    with EnergySession("sim:orin-nano", report=False, idle_s=0, sim_load=0.5) as s:
        outcome = measure_command(s, plan)
    [run] = outcome.points[0].runs
    assert run.problem_count == 0, run.problems
    own = json.loads(own_file.read_text())
    edges = [t for m in run.marked for t in (m.result.start_s, m.result.end_s)]
    assert len(edges) == len(own) == 2 * WINDOWS
    return [abs(edge - t / 1e9) * 1e3 for edge, t in zip(edges, own, strict=True)]


def summary(distances: list[float]) -> dict[str, Any]:
    ordered = sorted(distances)
    return {
        "median_ms": statistics.median(ordered),
        "p99_ms": ordered[int(0.99 * (len(ordered) - 1))],
        "max_ms": ordered[-1],
        "edges": len(ordered),
    }


@pytest.mark.parametrize("load", [0, 4], ids=["as-is", "4-cpu-bound"])
@pytest.mark.parametrize("how", ["stamped", "unstamped"])
def test_marked_edges(benchmark, tmp_path: Path, how: str, load: int) -> None:  # type: ignore[no-untyped-def]
    found: list[float] = []

    def run() -> None:
        with cpu_load(load):
            found.extend(edge_distances_ms(tmp_path, how))

    benchmark.pedantic(run, rounds=1, iterations=1)
    figures = summary(found)
    benchmark.extra_info.update(figures)
    print(
        f"\n{how} marks, {load} CPU-bound processes beside: median {figures['median_ms']:.4f} "
        f"ms, p99 {figures['p99_ms']:.4f} ms, max {figures['max_ms']:.4f} ms "
        f"over {figures['edges']} edges"
    )
    if how == "stamped":
        assert figures["max_ms"] <= 1.0
