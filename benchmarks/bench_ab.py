"""Benchmark: ``edgeenergy ab`` against the baseline-directory gate on a busy host.

One virtual Orin Nano, animated once, whose utilisation follows the host's CPU load (the
default ``--edge-sim-load=host``, as a real board follows thermals, DVFS and daemons),
with a duty-cycled CPU hog in the background: one core burnt for ~2 s, then ~2 s asleep,
over and over. The tests do a fixed amount of zlib work per item; the "+10 %" version
makes 11 calls per item instead of 10.

* ``edgeenergy ab``: N runs with head doing +10 % work (a detection is exit 1) and N runs
  of two identical copies (a false alarm is exit 1), interleaved; the rounds each run used
  and its wall time. Beside it, the wall time of running both versions once with the same
  repeats (one pytest session each), the yardstick of the issue's "at most 2x".
* today's gate: a baseline directory seeded with 5 unchanged runs
  (``--edge-save-baseline``), then N unchanged runs gated against it and saved into it (a
  main-branch run) interleaved with N +10 % runs gated only (``--edge-baseline=DIR
  --edge-fail=EXPR``), the same expression, repeats and load.

Target (issue 20): ab detects +10 % in >= 19 of 20 runs, raises <= 1 false alarm in 20, in
at most 2x the time of running both versions once. Prints a Markdown table (and the host it
ran on); every report and ab's output stay in ``--keep DIR`` when given.

    python benchmarks/bench_ab.py            # N = 20: about 1-2 hours on 2 cores
    python benchmarks/bench_ab.py --n 2      # a quick check that it runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_edgeenergy.report.baselines import BASELINE_RUNS
from pytest_edgeenergy.sim.runner import SimProcess
from pytest_edgeenergy.sim.tree import create

CALLS_PER_ITEM = 10
"""zlib calls per item of the base; the +10 % version makes one more."""
WORKLOAD = """
import zlib

import pytest

DATA = bytes(range(256)) * 512  # 128 KiB
CALLS = {calls}


def _item():
    for _ in range(CALLS):
        zlib.compress(DATA, 6)


@pytest.mark.parametrize("n", range(3))
def test_zlib(edge_bench, n):
    edge_bench.run(_item, items_per_call=1, params={{"workload": f"zlib{{n}}"}})
"""
HOG = """
import time
while True:
    end = time.monotonic() + {burn}
    while time.monotonic() < end:
        pass
    time.sleep({rest})
"""
AB_CODE = "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())"
RUN_TIMEOUT_S = 3600


@dataclass
class Outcome:
    """One verdict: its exit status, rounds (ab) and wall time."""

    status: int
    seconds: float
    rounds: int = 0


@dataclass
class Results:
    ab_changed: list[Outcome] = field(default_factory=list)
    ab_unchanged: list[Outcome] = field(default_factory=list)
    once_s: list[float] = field(default_factory=list)
    gate_changed: list[Outcome] = field(default_factory=list)
    gate_unchanged: list[Outcome] = field(default_factory=list)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20, help="runs per case (default 20)")
    p.add_argument("--expr", default="energy_per_item:mean:5%", help="the gate expression")
    p.add_argument("--repeats", type=int, default=5, help="--edge-repeats (default 5)")
    p.add_argument("--items", type=int, default=4, help="--edge-items (default 4)")
    p.add_argument("--rounds", type=int, default=3, help="ab --rounds (default 3)")
    p.add_argument("--max-rounds", type=int, default=10, help="ab --max-rounds (default 10)")
    p.add_argument("--burn-s", type=float, default=2.0, help="hog: seconds busy (default 2)")
    p.add_argument("--rest-s", type=float, default=2.0, help="hog: seconds idle (default 2)")
    p.add_argument("--no-hog", action="store_true", help="no background load")
    p.add_argument("--keep", type=Path, help="keep every report and log in this directory")
    return p


@contextlib.contextmanager
def _background(argv: Sequence[str]) -> Iterator[None]:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}


def _pytest_args(args: argparse.Namespace, board: Path) -> list[str]:
    return [
        "test_zlib.py",
        f"--edge-root={board}",
        f"--edge-repeats={args.repeats}",
        f"--edge-items={args.items}",
        "--edge-warmup=1",
        "--edge-min-window-s=0.3",
        "--edge-idle-s=0",
        "-p",
        "no:cacheprovider",
        "-q",
    ]


def _run(argv: list[str], cwd: Path, ok: Sequence[int] = (0, 1)) -> Outcome:
    started = time.monotonic()
    done = subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    seconds = time.monotonic() - started
    if done.returncode not in ok:
        sys.exit(
            f"bench_ab: {' '.join(argv[:6])}... exited {done.returncode}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return Outcome(done.returncode, seconds)


def _ab(args: argparse.Namespace, work: Path, head: str, out: Path, board: Path) -> Outcome:
    argv = [sys.executable, "-c", AB_CODE, "ab", "--base", "base", "--head", head]
    argv += ["--fail", args.expr, "--rounds", str(args.rounds)]
    argv += ["--max-rounds", str(args.max_rounds), "--out", str(out), "--"]
    outcome = _run(argv + _pytest_args(args, board), work)
    outcome.rounds = len(list(out.glob("A-*.json")))
    return outcome


def _session(args: argparse.Namespace, side: Path, board: Path, *extra: str) -> Outcome:
    argv = [sys.executable, "-m", "pytest", *_pytest_args(args, board), *extra]
    return _run(argv, side)


def run(args: argparse.Namespace, work: Path, board: Path) -> Results:
    for name, calls in (("base", CALLS_PER_ITEM), ("same", CALLS_PER_ITEM)):
        (work / name).mkdir()
        (work / name / "test_zlib.py").write_text(WORKLOAD.format(calls=calls))
    (work / "more").mkdir()
    (work / "more" / "test_zlib.py").write_text(WORKLOAD.format(calls=CALLS_PER_ITEM + 1))
    create("orin-nano", board)  # load None: follows the host
    baselines = work / "baselines"
    hog = [sys.executable, "-c", HOG.format(burn=args.burn_s, rest=args.rest_s)]
    res = Results()
    with contextlib.ExitStack() as stack:
        stack.enter_context(SimProcess(board))
        if not args.no_hog:
            stack.enter_context(_background(hog))
        for i in range(args.n):
            res.ab_changed.append(_ab(args, work, "more", work / f"ab-more-{i}", board))
            res.ab_unchanged.append(_ab(args, work, "same", work / f"ab-same-{i}", board))
            once = _session(args, work / "base", board, f"--edge-report={work}/once-a{i}.json")
            again = _session(args, work / "more", board, f"--edge-report={work}/once-b{i}.json")
            res.once_s.append(once.seconds + again.seconds)
            _say(f"ab run {i + 1}/{args.n} done")
        save = f"--edge-save-baseline={baselines}"
        for k in range(BASELINE_RUNS):
            _session(args, work / "base", board, f"--edge-report={work}/seed{k}.json", save)
        gate = [f"--edge-baseline={baselines}", f"--edge-fail={args.expr}"]
        for i in range(args.n):
            report = f"--edge-report={work}/same{i}.json"
            res.gate_unchanged.append(_session(args, work / "base", board, report, *gate, save))
            report = f"--edge-report={work}/more{i}.json"
            res.gate_changed.append(_session(args, work / "more", board, report, *gate))
            _say(f"baseline gate run {i + 1}/{args.n} done")
    return res


def _say(line: str) -> None:
    print(f"bench_ab: {line}", file=sys.stderr, flush=True)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(args: argparse.Namespace, res: Results) -> str:
    """The Markdown table of the results."""
    n = args.n
    once = _median(res.once_s)
    ab_times = [o.seconds for o in res.ab_changed + res.ab_unchanged]
    rounds = [o.rounds for o in res.ab_changed + res.ab_unchanged]
    gate_times = [o.seconds for o in res.gate_changed + res.gate_unchanged]
    lines = [
        f"N = {n} runs per case; gate `{args.expr}`; {args.repeats} repeats x {args.items} "
        f"items, 3 tests; virtual Orin Nano following the host's load"
        + ("" if args.no_hog else f", CPU hog {args.burn_s:g} s on / {args.rest_s:g} s off"),
        f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {platform.platform()}",
        "",
        "| method | detections (+10 % work) | false alarms (unchanged) | rounds used "
        "(median, max) | wall time per verdict (median) | vs. both versions once |",
        "|---|---:|---:|---:|---:|---:|",
        f"| `edgeenergy ab` (rounds {args.rounds}..{args.max_rounds}) "
        f"| {sum(o.status == 1 for o in res.ab_changed)}/{n} "
        f"| {sum(o.status == 1 for o in res.ab_unchanged)}/{n} "
        f"| {_median(rounds):g}, {max(rounds, default=0)} "
        f"| {_median(ab_times):.0f} s | {_median(ab_times) / once:.2f}x |",
        f"| baseline directory ({BASELINE_RUNS} runs) "
        f"| {sum(o.status == 1 for o in res.gate_changed)}/{n} "
        f"| {sum(o.status == 1 for o in res.gate_unchanged)}/{n} "
        f"| - | {_median(gate_times):.0f} s (one version) | - |",
        f"| both versions once (no verdict) | - | - | - | {once:.0f} s | 1x |",
        "",
        "target: ab detects >= 19/20, false alarms <= 1/20, in <= 2x the time of both "
        "versions once",
    ]
    return "\n".join(lines)


def _raw(res: Results) -> dict[str, object]:
    return {
        name: [vars(o) if isinstance(o, Outcome) else o for o in getattr(res, name)]
        for name in vars(res)
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.n < 1:
        sys.exit("bench_ab: --n must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    # The board apart from what --keep copies: its tree holds links (sysfs-like).
    board = Path(tempfile.mkdtemp(prefix="bench-ab-board-"))
    try:
        res = run(args, work, board)
        text = table(args, res)
        print(text)
        (work / "results.json").write_text(json.dumps(_raw(res), indent=2))
        (work / "table.md").write_text(text + "\n")
    finally:
        if args.keep is not None:
            shutil.copytree(work, args.keep, symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(board, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
