"""``--edge-fail`` against a baseline directory (report/paired.gate_baselines and the
plugin): the paired rule when the baselines were made by ``edgeenergy ab``, otherwise the
gate with a note that between-run drift limits what it sees, with the measured spread."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.report.load import check_report, load_report
from pytest_edgeenergy.report.model import (
    AB_ENV,
    AbSide,
    build_ab,
    build_device,
    build_header,
    build_result,
    build_validity,
    make_metric,
)
from pytest_edgeenergy.verdict.expr import GateExprError
from pytest_edgeenergy.verdict.model import PairedVerdict
from pytest_edgeenergy.verdict.paired import gate_baselines

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)
ORIN = Identity(
    model="NVIDIA Jetson Orin Nano", soc="tegra234", simulated=True, sim_model="orin-nano"
)
EXPR = "energy_per_item:median:5%"


def _report(
    medians: Mapping[str, float], minute: int, ab: tuple[AbSide, int] | None = None
) -> dict[str, Any]:
    """A report whose tests have repeats of these medians, started ``minute`` after T0,
    tagged as side/round of A/B session ``ab1`` when ``ab`` is given."""
    device = build_device(ORIN, RailMap(rails=(), total_rail="VDD_IN"))
    header = build_header(
        device, command_line=["pytest"], started_at=T0 + timedelta(minutes=minute)
    )
    tests = [
        build_result(
            test_id,
            status="passed",
            params={"workload": "resnet18"},
            metrics={"energy_per_item": make_metric("energy_per_item", [m * 0.99, m, m * 1.01])},
            validity=build_validity(samples=50, valid=True),
            duration_s=1.0,
        )
        for test_id, m in medians.items()
    ]
    doc: dict[str, Any] = {**header, "tests": tests}
    if ab is not None:
        side, round_no = ab
        doc["ab"] = build_ab("ab1", side, round_no, "main" if side == "A" else "pr")
    return check_report(json.loads(json.dumps(doc)), "synthetic")


def _save(directory: Path, reports: Sequence[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for i, report in enumerate(reports):
        (directory / f"r{i:02d}.json").write_text(json.dumps(report), encoding="utf-8")
    return directory


def _spread_pct(*runs: Sequence[float]) -> float:
    """The expected spread: median over tests of the stdev of log values across runs."""
    per_test = list(zip(*runs, strict=True))
    sd = statistics.median(statistics.stdev(math.log(v) for v in values) for values in per_test)
    return math.expm1(sd) * 100


# -- baselines from other runs: the drift note ------------------------------------------------


def test_baselines_from_other_runs_say_drift_limits_the_gate_with_their_spread(
    tmp_path: Path,
) -> None:
    runs = [(0.10, 0.20), (0.11, 0.21), (0.09, 0.20)]
    baselines = _save(
        tmp_path / "b",
        [_report({"t::a": a, "t::b": b}, minute=i) for i, (a, b) in enumerate(runs)],
    )
    verdict = gate_baselines(baselines, _report({"t::a": 0.1, "t::b": 0.2}, minute=9), [EXPR])
    assert not isinstance(verdict, PairedVerdict)
    (note,) = [m for m in verdict.messages if m.startswith("baselines from other runs")]
    expected = f"median {_spread_pct(*runs):.2g} % for energy_per_item:median over 2 tests"
    assert "between-run drift limits what this gate can see" in note
    assert f"run-to-run spread of these baselines: {expected}, 3 runs" in note
    assert "`edgeenergy ab` measures both versions interleaved" in note
    assert verdict.runs == 3 and not verdict.failed


def test_a_single_baseline_run_has_an_unknown_spread(tmp_path: Path) -> None:
    baselines = _save(tmp_path / "b", [_report({"t::a": 0.1}, minute=0)])
    verdict = gate_baselines(baselines, _report({"t::a": 0.1}, minute=9), [EXPR])
    assert any(
        "spread of these baselines: unknown with a single run" in m for m in verdict.messages
    )


def test_no_baseline_yet_is_no_verdict_and_a_bad_expression_is_still_an_error(
    tmp_path: Path,
) -> None:
    new = _report({"t::a": 0.1}, minute=9)
    verdict = gate_baselines(tmp_path / "none", new, [EXPR])
    assert not verdict.rows and any("no baseline yet" in m for m in verdict.messages)
    with pytest.raises(GateExprError, match="no result of this run carries"):
        gate_baselines(tmp_path / "none", new, ["latency_p90:median:5%"])


# -- baselines made by `edgeenergy ab`: the paired rule ---------------------------------------


def _session(rounds: int, ratio: float, tests: Sequence[str] = ("t::a", "t::b")) -> list[Any]:
    """Both sides of rounds 1..rounds of session ab1 on a board drifting 10 % a round."""
    reports = []
    for r in range(1, rounds + 1):
        level = 0.1 * (1 + 0.1 * r)
        wobble = 1 + 0.005 * (-1) ** r
        reports.append(_report(dict.fromkeys(tests, level), minute=2 * r, ab=("A", r)))
        b = {t: level * ratio * wobble for t in tests}
        reports.append(_report(b, minute=2 * r + 1, ab=("B", r)))
    return reports


def test_baselines_made_by_ab_are_judged_by_the_paired_rule(tmp_path: Path) -> None:
    baselines = _save(tmp_path / "ab", _session(3, 1.3))
    verdict = gate_baselines(baselines, _report({"t::a": 0.1}, minute=60), [EXPR])
    assert isinstance(verdict, PairedVerdict)
    assert [r.verdict for r in verdict.rows] == ["regression", "regression"]
    assert verdict.rounds == {"t::a": 3, "t::b": 3} and verdict.failed
    assert (verdict.baseline, verdict.new) == ("base main", "head pr")
    (note,) = [m for m in verdict.messages if "made by `edgeenergy ab`" in m]
    assert "session ab1, 3 complete rounds" in note and "paired rule" in note
    assert "this run is not one of its rounds" in note
    assert not any("between-run drift" in m for m in verdict.messages)


def test_a_run_inside_the_session_is_paired_with_its_rounds_so_far(tmp_path: Path) -> None:
    reports = _session(2, 1.0)
    reports.append(_report({"t::a": 0.13, "t::b": 0.13}, minute=20, ab=("A", 3)))
    baselines = _save(tmp_path / "ab", reports)
    this_run = _report({"t::a": 0.13, "t::b": 0.13}, minute=21, ab=("B", 3))
    verdict = gate_baselines(baselines, this_run, [EXPR])
    assert isinstance(verdict, PairedVerdict)
    assert verdict.rounds == {"t::a": 3, "t::b": 3}
    assert [r.verdict for r in verdict.rows] == ["within", "within"]
    assert any("this run is side B of round 3 of that session" in m for m in verdict.messages)


def test_ab_reports_of_one_side_only_are_baselines_from_other_runs(tmp_path: Path) -> None:
    only_a = [r for r in _session(3, 1.0) if r["ab"]["side"] == "A"]
    baselines = _save(tmp_path / "a", only_a)
    verdict = gate_baselines(baselines, _report({"t::a": 0.12}, minute=60), [EXPR])
    assert not isinstance(verdict, PairedVerdict)
    assert any("between-run drift" in m and "3 runs" in m for m in verdict.messages)


# -- in pytest ---------------------------------------------------------------------------------

WORKLOAD = """
import time

def _work():
    time.sleep(0.005)

def test_hash(edge_bench):
    edge_bench.run(_work, items_per_call=1, params={"workload": "sha256"})
"""

BENCH = [
    "--edge-board=sim:orin-nano",
    "--edge-items=8",
    "--edge-repeats=4",
    "--edge-warmup=1",
    "--edge-min-window-s=0.3",
    "--edge-idle-s=0.2",
    "--edge-sim-load=0.3",
    "-p",
    "no:cacheprovider",
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("EDGEENERGY_"):
            monkeypatch.delenv(key)


def _tagged_copy(report: Mapping[str, Any], side: AbSide, round_no: int, scale: float) -> Any:
    """``report`` as side/round of session ab1, its energy per item scaled."""
    doc = json.loads(json.dumps(report))
    doc["run_id"] = f"{side}{round_no}".lower().ljust(32, "0")
    doc["ab"] = build_ab("ab1", side, round_no, "main" if side == "A" else "pr")
    for test in doc["tests"]:
        metric = test["metrics"]["energy_per_item"]
        test["metrics"]["energy_per_item"] = make_metric(
            "energy_per_item", [s * scale for s in metric["samples"]]
        )
    return check_report(doc, "copy")


def test_edge_fail_says_drift_limits_it_then_uses_the_paired_rule_inside_an_ab_session(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "baselines"
    gate = [f"--edge-baseline={baselines}", f"--edge-fail={EXPR}"]
    first = pytester.runpytest_subprocess(
        *BENCH, f"--edge-report={tmp_path / 'a.json'}", f"--edge-save-baseline={baselines}"
    )
    assert first.ret == 0, first.stdout.str()
    second = pytester.runpytest_subprocess(*BENCH, f"--edge-report={tmp_path / 'b.json'}", *gate)
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(
        ["*baselines from other runs: between-run drift limits what this gate can see*"
         "unknown with a single run*"]
    )  # fmt: skip

    # Rounds 1-2 of an A/B session and side A of round 3; this run is side B of round 3.
    measured = load_report(tmp_path / "a.json")
    session = tmp_path / "session"
    copies = [_tagged_copy(measured, s, r, 1.0) for r in (1, 2, 3) for s in ("A", "B")]
    _save(session, copies[:5])
    monkeypatch.setenv(AB_ENV, json.dumps(build_ab("ab1", "B", 3, "pr")))
    inside = pytester.runpytest_subprocess(
        *BENCH, f"--edge-report={tmp_path / 'c.json'}", f"--edge-baseline={session}",
        f"--edge-fail={EXPR}",
    )  # fmt: skip
    out = inside.stdout.str()
    assert "baselines made by `edgeenergy ab` (session ab1, 3 complete rounds" in out, out
    assert "this run is side B of round 3 of that session" in out
    assert "between-run drift" not in out
    assert load_report(tmp_path / "c.json")["ab"]["round"] == 3
