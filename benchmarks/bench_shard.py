"""Benchmark: suites sharded 3 ways, balanced by count and by durations, against
pytest-split.

**Energy suite.** A generated suite of 30 energy tests of uneven length (0.02 to 0.30 s of
``time.sleep`` in one energy window each) runs once unsharded on a virtual Orin Nano (its
report gives the durations), then as 3 shards on 3 virtual boards of the same model,
balanced by count and by the unsharded report's durations (``--edge-shard-durations``).
For each form it prints the tests per shard, each shard's test time (the sum of its tests'
``duration_s``), how far apart the longest and shortest shard are, and whether ``edgeenergy
merge`` of the 3 shard reports holds exactly the unsharded run's result keys.

**Plain suite.** A generated suite of 60 plain tests (0.01 to 0.51 s of ``time.sleep``
each, a few long ones; no energy measured) runs once with 57 of its tests, writing a JUnit XML
(``--junitxml``) and, where pytest-split is installed, its ``.test_durations``
(``--store-durations``): 3 tests are new since. Then the 60 tests run as 3 shards balanced
by count, by the JUnit file, by ``.test_durations``, and by pytest-split's own
``--splits 3 --splitting-algorithm least_duration`` on the same ``.test_durations``. For each
it prints each shard's load as the ``.test_durations`` estimate it (a new test counting
their mean, as both tools do) and as measured (the sum of the shard's JUnit ``time``), and
whether our shards and pytest-split's have the same estimated loads and the same tests.
Without pytest-split importable (it is no dependency of the project: ``pip install
pytest-split`` beside, or put its package on ``PYTHONPATH``) the pytest-split rows are left
out and the estimates use the JUnit file's times.

Run ``python benchmarks/bench_shard.py`` or ``pytest benchmarks/bench_shard.py
--benchmark-only -s``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_edgeenergy.plugin.junit_times import match_cases, read_cases

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


# -- a plain suite: JUnit XML, .test_durations and pytest-split ---------------------------------

PLAIN_TESTS, KNOWN_TESTS = 60, 57
PLAIN_SUITE = """
import os
import time

import pytest

N = int(os.environ["BENCH_CASES"])
CASES = [(f"c{i:02d}", 0.01 + 0.5 * ((i * 11) % 29 / 28) ** 3) for i in range(N)]


@pytest.mark.parametrize("seconds", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_plain(seconds):
    time.sleep(seconds)
"""
HAS_PYTEST_SPLIT = importlib.util.find_spec("pytest_split") is not None


def _plain(work: Path, cases: int, *extra: str) -> list[str]:
    """pytest's output lines for the plain suite with ``cases`` tests."""
    cmd = [
        str(BIN / "pytest"), "test_plain.py", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
        *extra,
    ]  # fmt: skip
    env = {**os.environ, "BENCH_CASES": str(cases)}
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}")
    return done.stdout.splitlines()


def _junit_seconds(path: Path) -> float:
    return math.fsum(float(c.get("time", 0)) for c in ET.parse(path).iter("testcase"))


def _estimated_s(ids: Sequence[str], durations: Mapping[str, float], fill: float) -> float:
    return math.fsum(durations.get(i, fill) for i in ids)


def evaluate_plain() -> str:
    work = Path(tempfile.mkdtemp(prefix="edge-shard-plain-bench-"))
    try:
        (work / "test_plain.py").write_text(PLAIN_SUITE)
        earlier = ["--junitxml=earlier/junit.xml"]
        if HAS_PYTEST_SPLIT:
            earlier += ["--store-durations", "--durations-path=.test_durations"]
        _plain(work, KNOWN_TESTS, *earlier)
        forms: list[tuple[str, list[str]]] = [
            ("count", []),
            ("JUnit XML", ["--edge-shard-durations=earlier/junit.xml"]),
        ]
        if HAS_PYTEST_SPLIT:
            forms.append((".test_durations", ["--edge-shard-durations=.test_durations"]))
            split = ["--splits", str(SHARDS), "--durations-path", ".test_durations",
                     "--splitting-algorithm", "least_duration"]  # fmt: skip
            forms.append(("pytest-split least_duration", split))
            durations = json.loads((work / ".test_durations").read_text())
        else:  # the JUnit file's times, matched to node ids as the plugin matches them
            cases = read_cases([(work / "earlier" / "junit.xml").read_bytes()])
            ids = [f"test_plain.py::test_plain[c{i:02d}]" for i in range(PLAIN_TESTS)]
            durations = {i: s[0] for i, s in match_cases(cases, ids)[0].items()}
        fill = math.fsum(durations.values()) / len(durations)
        lines = [
            f"{PLAIN_TESTS} plain tests of 0.01-0.51 s (a few long ones) in {SHARDS} shards; "
            f"durations of an earlier run of {KNOWN_TESTS} of them (the other "
            f"{PLAIN_TESTS - KNOWN_TESTS} count their mean); loads estimated by the "
            f"{'.test_durations' if HAS_PYTEST_SPLIT else 'JUnit XML'} times",
            "| balanced by | tests per shard | estimated load per shard | measured per shard "
            "| measured max/min |",
            "|---|---|---|---|---|",
        ]
        estimated: dict[str, list[float]] = {}
        selected: dict[str, list[set[str]]] = {}
        for label, extra in forms:
            times, counts, loads, parts = [], [], [], []
            for k in range(1, SHARDS + 1):
                junit = work / f"{label.split()[0]}-{k}.xml"
                group = ["--group", str(k)] if label.startswith("pytest-split") else [
                    f"--edge-shard={k}/{SHARDS}"
                ]  # fmt: skip
                listed = _plain(work, PLAIN_TESTS, "--collect-only", *extra, *group)
                ids = [line for line in listed if line.startswith("test_plain.py::")]
                _plain(work, PLAIN_TESTS, f"--junitxml={junit}", *extra, *group)
                times.append(_junit_seconds(junit))
                counts.append(len(ids))
                loads.append(_estimated_s(ids, durations, fill))
                parts.append(set(ids))
            estimated[label], selected[label] = loads, parts
            lines.append(
                f"| {label} | {' / '.join(map(str, counts))} "
                f"| {' / '.join(f'{t:.3f}' for t in loads)} s "
                f"| {' / '.join(f'{t:.3f}' for t in times)} s "
                f"| {100 * (max(times) / min(times) - 1):.1f} % apart |"
            )
        if HAS_PYTEST_SPLIT:
            ours, theirs = ".test_durations", "pytest-split least_duration"
            same_loads = all(
                math.isclose(a, b, rel_tol=1e-9)
                for a, b in zip(sorted(estimated[ours]), sorted(estimated[theirs]), strict=True)
            )
            same_tests = sorted(map(sorted, selected[ours])) == sorted(
                map(sorted, selected[theirs])
            )
            lines.append(
                f"ours by .test_durations vs pytest-split least_duration: estimated loads "
                f"{'equal' if same_loads else 'DIFFERENT'}, shards of "
                f"{'the same tests' if same_tests else 'other tests (ties broken otherwise)'}"
            )
        else:
            lines.append("pytest-split is not importable: the comparison with it is left out")
        return "\n".join(lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    print(evaluate())
    print()
    print(evaluate_plain())
    return 0


def test_shards(benchmark: Any) -> None:
    print()
    print(benchmark.pedantic(evaluate, rounds=1, iterations=1))


def test_plain_shards(benchmark: Any) -> None:
    print()
    print(benchmark.pedantic(evaluate_plain, rounds=1, iterations=1))


if __name__ == "__main__":
    raise SystemExit(main())
