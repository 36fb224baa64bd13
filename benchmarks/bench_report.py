"""Benchmark: ``edgeenergy compare`` over 50 reports of 2,000 test results each, with a gate.

Each result carries the four compared metrics (J/item, latency p90, items/s, EDP) with 5
repeats and their stats, so one report is ~4 MB of JSON (200 MB in all). Ten devices x five
runs; every run after a device's first is gated against the previous one. Target: <= 3 s
per round on 2 cores (the first round also imports scipy). Run with
``pytest benchmarks/bench_report.py --benchmark-only``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.commands.compare import compare_main

# The synthetic reports are the tests' (tests/synthetic_reports.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic_reports import synthetic_report

REPORTS = 50
RESULTS_PER_REPORT = 2000
DEVICES = ("agx-orin", "orin-nano", "orin-nx", "xavier-nx", "nano")
METRICS = ("energy_per_item", "latency_p90", "throughput", "edp")


@pytest.fixture(scope="session")
def report_paths(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("bench-reports")
    paths = []
    for i in range(REPORTS):
        report = synthetic_report(
            sim_model=DEVICES[i % len(DEVICES)],
            l4t="36.4.3" if i % 10 < 5 else "35.6.0",  # ten device fingerprints
            n_tests=RESULTS_PER_REPORT,
            repeats=5,
            seed=i,
            energy_scale=1.0 + 0.01 * (i // 10),
            metrics=METRICS,
        )
        path = folder / f"run{i:02d}.json"
        path.write_text(json.dumps(report, separators=(",", ":")))
        paths.append(path)
    return paths


def test_compare_and_gate_50_reports(
    benchmark: Any, report_paths: list[Path], tmp_path: Path
) -> None:
    argv = [str(p) for p in report_paths]
    argv += ["--fail", "energy_per_item:mean:5%", "--fail", "latency_p90:median:10%"]
    argv += ["--format", "markdown", "--output", str(tmp_path / "compare.md")]
    code = benchmark.pedantic(compare_main, args=(argv,), rounds=3, iterations=1)
    assert code in (0, 1)
    text = (tmp_path / "compare.md").read_text()
    assert text.count("### Energy gate") == REPORTS - 10
