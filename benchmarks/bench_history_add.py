"""Benchmark: ``edgeenergy history add`` and the series read of a large SQLite history.

Builds a SQLite history of ``RUNS`` runs x 300 results (50 tests x 6 metrics of a synthetic
report, each run with its own run id, time and 3 % noise) through the store's own row
builder and table (filled in large transactions, not timed), then times, on that database:

* ``add``: :meth:`HistoryStore.add_report` of one new report file (300 results, read and
  validated from disk as the command does), median of 5 adds;
* ``add again``: the same report once more (nothing changes);
* ``series one``: one test's series (one device, one test id, one metric: what a gate
  against the history reads), median of 5;
* ``series all``: every series of one metric (what ``history changes`` reads per metric),
  and every series of every metric (3 M points);
* ``gate``: ``edgeenergy history gate`` of a new report against its device's last 10 runs
  (the whole command), median of 3.

Target (issue 22): ``history add`` of one report <= 1 s at 10,000 runs x 300 results (3 M
rows). Run ``python benchmarks/bench_history_add.py [--runs N]`` or ``pytest
benchmarks/bench_history_add.py --benchmark-only -s`` (``EDGEENERGY_BENCH_RUNS``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pytest_edgeenergy.history import open_store, schema
from pytest_edgeenergy.history.store import HistoryStore, report_rows

# The synthetic reports are the tests' (tests/synthetic_reports.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic_reports import synthetic_report

RUNS = int(os.environ.get("EDGEENERGY_BENCH_RUNS", "10000"))
METRICS = ("energy_per_item", "energy_j", "latency_p90", "throughput", "power_mean", "edp")
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def template() -> dict[str, Any]:
    return synthetic_report(n_tests=50, metrics=METRICS, seed=1, started_at=START)


def fill(store: HistoryStore, runs: int, chunk: int = 200) -> int:
    """Insert ``runs`` runs through the store's tables; returns the rows written."""
    base = template()
    rng = random.Random(7)
    written = 0
    for first in range(0, runs, chunk):
        run_rows, result_rows = [], []
        for i in range(first, min(first + chunk, runs)):
            run, rows = report_rows(base, branch="main")
            run["run_id"] = f"{i:032x}"
            run["started_at"] = START + timedelta(hours=i)
            for row in rows:
                row["run_id"], row["started_at"] = run["run_id"], run["started_at"]
                if row["value"] is not None:
                    row["value"] *= 1 + rng.gauss(0, 0.03)
            run_rows.append(run)
            result_rows.extend(rows)
        with store.engine.begin() as conn:
            conn.execute(schema.runs.insert(), run_rows)
            conn.execute(schema.results.insert(), result_rows)
        written += len(result_rows)
    return written


def _median_s(fn: Any, times: int = 5) -> float:
    spent = []
    for _ in range(times):
        t0 = time.perf_counter()
        fn()
        spent.append(time.perf_counter() - t0)
    return statistics.median(spent)


def report(runs: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "energy.db"
        t0 = time.perf_counter()
        with open_store(db) as store:
            rows = fill(store, runs)
        fill_s = time.perf_counter() - t0
        files = []
        for k in range(6):
            doc = synthetic_report(
                n_tests=50,
                metrics=METRICS,
                seed=100 + k,
                started_at=START + timedelta(hours=runs + k),
            )
            files.append(Path(tmp) / f"new{k}.json")
            files[-1].write_text(json.dumps(doc))
        with open_store(db) as store:
            spent = []
            for path in files[:5]:
                t = time.perf_counter()
                done = store.add_report(path, branch="main")
                spent.append(time.perf_counter() - t)
                assert done.added and done.results == 300
            add_s = statistics.median(spent)
            t = time.perf_counter()
            assert not store.add_report(files[0]).added
            again_s = time.perf_counter() - t
            one = store.series(metric="energy_per_item")[0]
            one_s = _median_s(
                lambda: store.series(test=one.test, metric="energy_per_item", device=one.device)
            )
            t = time.perf_counter()
            every = store.series(metric="energy_per_item")
            all_s = time.perf_counter() - t
            t = time.perf_counter()
            whole = store.series()
            whole_s = time.perf_counter() - t
        gate_s = _median_s(lambda: _gate(files[5], db), times=3)
        size_mb = db.stat().st_size / 1e6
    lines = [
        f"history of {runs:,} runs x 300 results = {rows:,} rows "
        f"(SQLite file {size_mb:,.0f} MB, filled in {fill_s:,.0f} s)",
        f"{'operation':<34} {'time [s]':>9}",
        f"{'add one report (300 results)':<34} {add_s:>9.3f}",
        f"{'add the same report again':<34} {again_s:>9.3f}",
        f"{'series of one test x metric':<34} {one_s:>9.3f}  ({len(one.points):,} points)",
        f"{'every series of one metric':<34} {all_s:>9.3f}  ({len(every)} series)",
        f"{'every series, every metric':<34} {whole_s:>9.3f}  ({len(whole)} series)",
        f"{'history gate, 10 runs, 50 tests':<34} {gate_s:>9.3f}  (the whole command)",
    ]
    return "\n".join(lines)


def _gate(report_path: Path, db: Path) -> None:
    """``edgeenergy history gate`` of a new report against the device's last 10 runs (the
    whole command: load and validate the report, read the runs, judge; output discarded)."""
    import contextlib
    import io

    from pytest_edgeenergy.commands.history import history_main

    argv = ["gate", str(report_path), "--fail", "energy_per_item:mean:5%", "--db", str(db)]
    with contextlib.redirect_stdout(io.StringIO()):
        status = history_main(argv)
    assert status in (0, 1), status


def test_history_add(benchmark: Any) -> None:
    text = benchmark.pedantic(report, args=(RUNS,), rounds=1, iterations=1)
    print("\n" + text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    print(report(parser.parse_args().runs))
