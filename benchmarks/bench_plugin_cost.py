"""What the installed plugin costs a pytest run in which no test measures energy.

One trivial test, run in a fresh ``python -m pytest`` process with the plugin (as installed)
and with ``-p no:edgeenergy``, the two interleaved (in alternating order) so drift of a
shared machine hits both alike. Each round times :data:`PAIRS` pairs and returns the median
of the per-pair wall-time differences; the figures printed are the medians over all pairs
of the wall-time and the CPU-time (user + system) differences, in ms, and the ratios of the
medians. The CPU time is the steadier figure on a shared machine. Target: <= 20 ms. Run with
``pytest benchmarks/bench_plugin_cost.py --benchmark-only -s``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PAIRS = 8
ROUNDS = 3
TARGET_MS = 20.0

TRIVIAL = "def test_trivial():\n    assert 1 + 1 == 2\n"


# As installed: bytecode cached (an environment with PYTHONDONTWRITEBYTECODE would compile
# every module of the project at every run and time the compiler instead).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def pytest_run_s(folder: Path, *args: str) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one pytest process over ``folder``'s tests
    (also used by bench_harness.py)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=ENV,
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _report(on: list[float], off: list[float]) -> tuple[float, float]:
    """Median of the per-pair differences (ms) and the ratio of the medians."""
    added_ms = statistics.median((a - b) * 1000 for a, b in zip(on, off, strict=True))
    return added_ms, statistics.median(on) / statistics.median(off)


def test_plugin_cost_without_measuring_tests(benchmark: Any, tmp_path: Path) -> None:
    (tmp_path / "test_trivial.py").write_text(TRIVIAL)
    with_s: list[tuple[float, float]] = []
    without_s: list[tuple[float, float]] = []
    pytest_run_s(tmp_path)  # warm the page cache and write the .pyc files of both variants
    pytest_run_s(tmp_path, "-p", "no:edgeenergy")

    def run() -> float:
        diffs = []
        for i in range(PAIRS):
            if i % 2:
                off = pytest_run_s(tmp_path, "-p", "no:edgeenergy")
                on = pytest_run_s(tmp_path)
            else:
                on = pytest_run_s(tmp_path)
                off = pytest_run_s(tmp_path, "-p", "no:edgeenergy")
            with_s.append(on)
            without_s.append(off)
            diffs.append(on[0] - off[0])
        return statistics.median(diffs)

    benchmark.pedantic(run, rounds=ROUNDS, iterations=1)
    lines = [f"\nplugin cost in a run with no measuring test ({len(with_s)} interleaved pairs; "]
    lines[0] += f"target <= {TARGET_MS:g} ms):"
    for i, kind in enumerate(("wall", "CPU")):
        on = [x[i] for x in with_s]
        off = [x[i] for x in without_s]
        added_ms, ratio = _report(on, off)
        benchmark.extra_info[f"added_{kind.lower()}_ms_median"] = round(added_ms, 1)
        benchmark.extra_info[f"{kind.lower()}_ratio"] = round(ratio, 3)
        lines.append(
            f"  {kind:4}: +{added_ms:.1f} ms (median of pair differences); median run "
            f"{statistics.median(on) * 1000:.0f} ms with the plugin, "
            f"{statistics.median(off) * 1000:.0f} ms with -p no:edgeenergy (ratio {ratio:.3f})"
        )
    benchmark.extra_info["pairs"] = len(with_s)
    print("\n".join(lines))
