"""Benchmark: one search study shared by several workers against one worker alone.

Replays the shared Orin Nano training table (ResNet-18, 180 power modes;
:mod:`search_tables`) with ``edgeenergy search --storage journal:FILE --study NAME``, the
``auto`` strategy and 30 trials in total, started as 1 process and as 3 processes joining
one study:

* ``gap``: how far the study's best point is from the table's optimum (min-energy; and
  min-time under a power budget at the table's 10th percentile of power), median over
  seeds: sharing a study must not make the search worse;
* ``wall``: wall time with every replayed measurement taking ``--delay-s`` seconds (as a
  real profile would), 1 worker against 3: the ratio the issue asks about (60 profiles in
  a third of the time on 3 boards).

Run ``python benchmarks/bench_search_study.py [--seeds N] [--delay-s S]`` or ``pytest
benchmarks/bench_search_study.py --benchmark-only -s``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_tables import groups, write_csvs

TRIALS = 30
EDGEENERGY = [str(Path(sys.executable).with_name("edgeenergy"))]
"""The ``edgeenergy`` command of the running interpreter's environment."""


def _table_csv(tmp: Path) -> Path:
    return next(p for p in write_csvs(tmp) if p.name == "orin_nano_train.csv")


def _power_budget_w() -> float:
    powers = sorted(t.power_w for t in groups()["orin-nano train resnet"].trials)  # type: ignore[misc]
    return powers[len(powers) // 10]


def _optimum(budget_w: float | None) -> float:
    trials = groups()["orin-nano train resnet"].trials
    if budget_w is None:
        return min(t.time_s * t.power_w for t in trials)  # type: ignore[operator]
    return min(t.time_s for t in trials if t.power_w <= budget_w)  # type: ignore[operator,type-var]


def run_study(
    csv_path: Path, workers: int, seed: int, delay_s: float, budget_w: float | None
) -> tuple[float, float]:
    """(the study's best: energy J, or time s under the budget; wall seconds)."""
    work = Path(tempfile.mkdtemp(prefix="edge-study-bench-"))
    try:
        storage = f"journal:{work}/study.log"
        objective = (
            ["--objective", "min-energy"]
            if budget_w is None
            else ["--objective", "min-time", "--power-budget-w", f"{budget_w}"]
        )
        args = [
            *EDGEENERGY, "search", "--storage", storage, "--study", "s",
            "--replay", str(csv_path), "--where", "workload=resnet",
            "--trials", str(TRIALS), "--strategy", "auto", "--seed", str(seed),
            "--replay-delay-s", str(delay_s), *objective,
        ]  # fmt: skip
        start = time.monotonic()
        procs = [
            subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(workers)
        ]
        for proc in procs:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"worker failed ({proc.returncode}): {err}")
        wall_s = time.monotonic() - start
        shown = subprocess.run(
            [*EDGEENERGY, "search", "--storage", storage, "--study", "s", "--show", "--json"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        search = json.loads(shown.stdout)["searches"][0]
        measured = [t for t in search["trials"] if t["status"] == "measured"]
        if len(measured) != TRIALS:
            raise RuntimeError(f"the study holds {len(measured)} measured trials, not {TRIALS}")
        best = search["best"]
        return (best["energy_j"] if budget_w is None else best["time_s"]), wall_s
    finally:
        shutil.rmtree(work, ignore_errors=True)


def evaluate(seeds: int, delay_s: float) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="edge-study-tables-"))
    try:
        csv_path = _table_csv(tmp)
        lines = [f"auto, {TRIALS} trials in total, Orin Nano ResNet-18 training table (180 points)"]
        lines.append("| case | 1 worker | 3 workers, one study |")
        lines.append("|---|---|---|")
        for label, budget_w in (
            ("min-energy gap to the optimum", None),
            (f"min-time under {_power_budget_w():.3g} W gap", _power_budget_w()),
        ):
            optimum = _optimum(budget_w)
            gaps: dict[int, list[float]] = {1: [], 3: []}
            for seed in range(seeds):
                for workers in (1, 3):
                    found, _ = run_study(csv_path, workers, seed, 0.0, budget_w)
                    gaps[workers].append(100.0 * (found / optimum - 1.0))
            lines.append(
                f"| {label}, median of {seeds} seeds | {statistics.median(gaps[1]):.1f} % "
                f"| {statistics.median(gaps[3]):.1f} % |"
            )
        _, one_s = run_study(csv_path, 1, 0, delay_s, None)
        _, three_s = run_study(csv_path, 3, 0, delay_s, None)
        lines.append(
            f"| wall time, {delay_s:g} s per trial | {one_s:.1f} s | {three_s:.1f} s "
            f"({three_s / one_s:.2f}x) |"
        )
        return "\n".join(lines)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--delay-s", type=float, default=1.0)
    args = p.parse_args(argv)
    if args.seeds < 1 or args.delay_s < 0:
        p.error("--seeds must be at least 1 and --delay-s not negative")
    print(evaluate(args.seeds, args.delay_s))
    return 0


def test_search_study(benchmark: Any) -> None:
    print()
    print(benchmark.pedantic(evaluate, args=(3, 1.0), rounds=1, iterations=1))


if __name__ == "__main__":
    raise SystemExit(main())
