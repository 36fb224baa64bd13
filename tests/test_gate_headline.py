"""Every gate's headline claims no more than it decided: a gate whose rows are all
``insufficient`` says NOT DECIDED (how many, why, and what would fail it), one that decided
some says on how many it passed, with the documented exit codes kept. Checked on each front
end: ``edgeenergy ab`` and ``history gate`` here (``compare`` in test_gate_cli.py), the
pytest gate against a baseline directory and against the history, on inputs whose verdict
is determined (built reports; live runs with one or two repeats a side, which no change can
be shown with).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_report
from test_gate_plugin import BENCH as GATE_BENCH
from test_gate_plugin import WORKLOAD
from test_paired_plugin import _report as round_report  # three repeats around a median

from pytest_edgeenergy.commands import main

MEDIAN_5 = "energy_per_item:median:5%"
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
NOT_ENOUGH = (
    "not enough repeats to judge ({n} baseline, {n} new; need >= 3 each and enough for p < 0.05)"
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("EDGEENERGY_", "GITHUB_")):
            monkeypatch.delenv(key)


# -- edgeenergy ab --------------------------------------------------------------------------


def _rounds(tmp_path: Path, per_test: Mapping[str, Sequence[tuple[float, float]]]) -> list[Path]:
    """A1 B1 A2 B2 ... written to files: per test, per round, the (A, B) medians."""
    paths = []
    for r in range(len(next(iter(per_test.values())))):
        for side, k in (("A", 0), ("B", 1)):
            report = round_report({t: v[r][k] for t, v in per_test.items()}, 2 * r + k)
            path = tmp_path / f"{side}{r + 1}.json"
            path.write_text(json.dumps(report), encoding="utf-8")
            paths.append(path)
    return paths


def _steady(ratio: float, wobble: Sequence[float]) -> list[tuple[float, float]]:
    """B is ``ratio`` times A, times exp(wobble[i]) in round i."""
    return [(0.1, 0.1 * ratio * math.exp(w)) for w in wobble]


# +5 % with rounds wobbling 6 %: after its 3 rounds the 5 % threshold is inside the change's
# bounds. Unchanged with rounds within 0.5 %: within.
NEAR = _steady(1.05, [0.06, -0.05, 0.07])
SAME = _steady(1.0, [0.004, -0.003, 0.001])


def _ab(tmp_path: Path, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    code = "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, "ab", *map(str, argv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _verdict_line(text: str) -> str:
    (line,) = [x for x in text.splitlines() if "gate " in x and "Energy gate" not in x]
    return line.removeprefix("- ")


def test_ab_whose_every_test_is_insufficient_says_not_decided(tmp_path: Path) -> None:
    paths = _rounds(tmp_path, {"t::near": NEAR})
    done = _ab(tmp_path, "--reports", *paths, "--fail", MEDIAN_5, "--format", "markdown")
    assert done.returncode == 0, done.stdout + done.stderr  # the documented exit code
    line = _verdict_line(done.stdout)
    assert line.startswith(
        "gate NOT DECIDED: the one row could not be decided (insufficient: undecided after 3 "
        "rounds: change "
    )
    assert line.endswith(
        "the 5% threshold inside: could not tell); --fail-insufficient would fail the gate"
    )
    assert "gate passed" not in done.stdout
    # the step summary says the same
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert _verdict_line(summary) == line

    strict = _ab(tmp_path, "--reports", *paths, "--fail", MEDIAN_5, "--fail-insufficient")
    assert strict.returncode == 1
    assert (
        "gate FAILED: 1 insufficient (strict: insufficient fails); not decided: " in strict.stdout
    )


def test_ab_that_decided_some_tests_passes_on_those_only(tmp_path: Path) -> None:
    paths = _rounds(tmp_path, {"t::near": NEAR, "t::same": SAME})
    done = _ab(tmp_path, "--reports", *paths, "--fail", MEDIAN_5)
    assert done.returncode == 0, done.stdout + done.stderr
    # t::same within, t::near and the suite row of the two (+3.88 %) could not be decided
    assert _verdict_line(done.stdout) == (
        "gate passed on 1 of 3 rows (1 within); 2 could not be decided (insufficient: too few "
        "repeats or rounds to tell the change from the threshold, repeats spread wider than "
        "the threshold, or a failed or invalid result: each row's note says which); "
        "--fail-insufficient would fail the gate"
    )


# -- edgeenergy history gate ----------------------------------------------------------------


def _two_repeats(scale: float, hours: int) -> dict[str, Any]:
    report = synthetic_report(
        repeats=2,
        n_tests=3,
        batch_sizes=(8,),
        gpu_freqs_hz=(612e6,),
        energy_scale=scale,
        started_at=T0 + timedelta(hours=hours),
        seed=hours,
    )
    report["git"] = {"commit": f"{hours:02d}" + "ab" * 19, "dirty": False}
    return report


def test_history_gate_with_two_repeats_a_side_says_not_decided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    first = tmp_path / "r0.json"
    first.write_text(json.dumps(_two_repeats(1.0, 0)), encoding="utf-8")
    assert main(["history", "add", str(first), "--db", str(db)]) == 0
    new = tmp_path / "r1.json"
    new.write_text(json.dumps(_two_repeats(1.16, 1)), encoding="utf-8")
    capsys.readouterr()
    gate = ["history", "gate", str(new), "--db", str(db), "--fail", "energy_per_item:mean:5%"]
    assert main(gate) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1] == (
        f"gate NOT DECIDED: none of 3 rows could be decided (insufficient: "
        f"{NOT_ENOUGH.format(n=2)}); --fail-insufficient would fail the gate"
    )
    assert main([*gate, "--fail-insufficient"]) == 1


# -- pytest: --edge-baseline and --edge-history ---------------------------------------------

# test_hash_loose has its own 1000 % threshold, which no change of the same work reaches
# (within); test_hash the run's 0 %: any change is over it, and two repeats a side cannot
# show one (insufficient).
BENCH = ["--edge-board=sim:orin-nano", *GATE_BENCH, "--edge-repeats=2", "-p", "no:randomly"]


def test_pytest_gate_says_on_how_many_rows_it_passed_and_when_it_decided_none(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "baselines"
    first = pytester.runpytest_subprocess(
        *BENCH, f"--edge-report={tmp_path / 'a.json'}", f"--edge-save-baseline={baselines}"
    )
    assert first.ret == 0, first.stdout.str()
    gate = [*BENCH, f"--edge-baseline={baselines}", "--edge-fail=energy_per_item:mean:0%"]
    some = pytester.runpytest_subprocess(*gate, f"--edge-report={tmp_path / 'b.json'}")
    assert some.ret == 0, some.stdout.str()
    some.stdout.fnmatch_lines(
        [f"gate passed on 1 of 2 rows (1 within); 1 could not be decided (insufficient: "
         f"{NOT_ENOUGH.format(n=2)}); --edge-fail-insufficient would fail the gate",
         "edgeenergy gate: passed on 1 of 2 rows (1 could not be decided; "
         "--edge-fail-insufficient would fail it)"]
    )  # fmt: skip
    none = pytester.runpytest_subprocess(
        *gate, f"--edge-report={tmp_path / 'c.json'}", "-k", "not loose"
    )
    assert none.ret == 0, none.stdout.str()
    none.stdout.fnmatch_lines(
        [f"gate NOT DECIDED: the one row could not be decided (insufficient: "
         f"{NOT_ENOUGH.format(n=2)}); --edge-fail-insufficient would fail the gate",
         "edgeenergy gate: NOT DECIDED (1 could not be decided; --edge-fail-insufficient "
         "would fail it)"]
    )  # fmt: skip
    assert "gate passed" not in none.stdout.str()


# One window a test: one sample, which no change can be shown with; the second run works
# longer, so its energy differs from the first's.
ENERGY_TEST = """
import os, time

def test_work(energy):
    with energy.window("work"):
        time.sleep(float(os.environ["WORK_S"]))
"""


def test_pytest_gate_against_the_history_says_not_decided(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=ENERGY_TEST)
    db = pytester.path / "energy.db"
    board = ["--edge-board=sim:orin-nano", "--edge-idle-s=0.2", "--edge-sim-load=0.3"]
    board += ["-p", "no:cacheprovider"]
    monkeypatch.setenv("WORK_S", "0.3")
    first = pytester.runpytest_subprocess(*board, f"--edge-history={db}", "--edge-history-add")
    assert first.ret == 0, first.stdout.str()
    monkeypatch.setenv("WORK_S", "0.4")
    second = pytester.runpytest_subprocess(
        *board, f"--edge-history={db}", "--edge-fail=energy_j:mean:0%"
    )
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(
        [f"gate NOT DECIDED: the one row could not be decided (insufficient: "
         f"{NOT_ENOUGH.format(n=1)}); --edge-fail-insufficient would fail the gate",
         "edgeenergy gate: NOT DECIDED*"]
    )  # fmt: skip
