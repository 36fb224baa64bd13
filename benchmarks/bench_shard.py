"""Benchmark: a suite sharded over 3 virtual boards, balanced by count and by durations.

A generated suite of 30 energy tests of uneven length (0.02 to 0.30 s of ``time.sleep``
in one energy window each) runs once unsharded on a virtual Orin Nano (its report gives
the durations), then as 3 shards on 3 virtual boards of the same model, balanced by count
and by the unsharded report's durations (``--edge-shard-durations``). For each form it
prints the tests per shard, each shard's test time (the sum of its tests' ``duration_s``),
how far apart the longest and shortest shard are, and whether ``edgeenergy merge`` of the
3 shard reports holds exactly the unsharded run's result keys.

Run ``python benchmarks/bench_shard.py`` or ``pytest benchmarks/bench_shard.py
--benchmark-only -s``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SHARDS = 3
SUITE = """
import time
import pytest

CASES = [(f"m{i:02d}", 0.02 + 0.01 * ((i * 7) % 29)) for i in range(30)]


@pytest.mark.parametrize("name,seconds", CASES, ids=[c[0] for c in CASES])
def test_work(energy, name, seconds):
    with energy.window(name):
        time.sleep(seconds)
"""
BIN = Path(sys.executable).parent


def _pytest(work: Path, report: Path, *extra: str) -> None:
    cmd = [
        str(BIN / "pytest"), "test_suite.py", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
        "--edge-board=sim:orin-nano", "--edge-idle-s=0.2", f"--edge-report={report}", *extra,
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}")


def _ids(report: Path) -> set[str]:
    return {t["id"] for t in json.loads(report.read_text())["tests"]}


def _durations_s(report: Path) -> list[float]:
    return [float(t["duration_s"]) for t in json.loads(report.read_text())["tests"]]


def evaluate() -> str:
    work = Path(tempfile.mkdtemp(prefix="edge-shard-bench-"))
    try:
        (work / "test_suite.py").write_text(SUITE)
        full = work / "full.json"
        _pytest(work, full)
        lines = [
            f"30 tests of 0.02-0.30 s over {SHARDS} virtual Orin Nanos",
            "| balanced by | tests per shard | test time per shard | max/min "
            "| merged == unsharded |",
            "|---|---|---|---|---|",
        ]
        for label, extra in (("count", []), ("durations", [f"--edge-shard-durations={full}"])):
            reports = []
            for k in range(1, SHARDS + 1):
                report = work / f"{label}-{k}.json"
                _pytest(work, report, f"--edge-shard={k}/{SHARDS}", *extra)
                reports.append(report)
            merged = work / f"{label}-merged.json"
            subprocess.run(
                [str(BIN / "edgeenergy"), "merge", *map(str, reports), "-o", str(merged)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            times = [sum(_durations_s(r)) for r in reports]
            counts = [len(_durations_s(r)) for r in reports]
            lines.append(
                f"| {label} | {' / '.join(map(str, counts))} "
                f"| {' / '.join(f'{t:.3f}' for t in times)} s "
                f"| {100 * (max(times) / min(times) - 1):.1f} % apart "
                f"| {'yes' if _ids(merged) == _ids(full) else 'NO'} |"
            )
        return "\n".join(lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    print(evaluate())
    return 0


def test_shards(benchmark: Any) -> None:
    print()
    print(benchmark.pedantic(evaluate, rounds=1, iterations=1))


if __name__ == "__main__":
    raise SystemExit(main())
