"""``edgeenergy compare --fail``: a gate with no silent outcome.

Typos are usage errors, a change every test shows is judged even with 2 repeats per test,
a baseline directory's run-to-run spread keeps host noise from failing CI, a first run has
no baseline yet, and ``--fail-insufficient`` makes thin measurements fail.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.report.model import Metric, make_metric

FAIL = "energy_per_item:mean:5%"
T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)


def _save(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(report))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = compare_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _scaled(report: dict[str, Any], factor: float, *, hours: int = 1) -> dict[str, Any]:
    """``report`` with every energy-per-item figure times ``factor``, as another run."""
    out = copy.deepcopy(report)
    out["run_id"] = hashlib.md5(f"{report['run_id']}-{factor}-{hours}".encode()).hexdigest()
    out["started_at"] = (T0 + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")
    for test in out["tests"]:
        metric = test["metrics"]["energy_per_item"]
        test["metrics"]["energy_per_item"] = _times(metric, factor)
    return out


def _times(metric: dict[str, Any], factor: float) -> Metric:
    """``metric`` with every sample times ``factor`` and its stats recomputed: a report's
    stats must follow from its samples."""
    return make_metric("energy_per_item", [x * factor for x in metric["samples"]])


def _quick_suite() -> dict[str, Any]:
    """Nine tests at one operating point with 2 repeats each, as ``--edge-quick`` runs."""
    return synthetic_report(
        n_tests=9, repeats=2, batch_sizes=(8,), gpu_freqs_hz=(612e6,), started_at=T0
    )


# -- a metric or statistic that does not exist is a usage error ------------------------------


def test_metric_no_result_carries_is_exit_2_listing_the_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _save(tmp_path / "a.json", _quick_suite())
    new = _save(tmp_path / "b.json", _scaled(_quick_suite(), 1.3))
    code, out, err = _run(capsys, base, new, "--fail", "enrgy_per_item:mean:5%")
    assert code == 2 and out == ""
    assert "no result of" in err and "carries the metric 'enrgy_per_item'" in err
    assert "did you mean 'energy_per_item'?" in err
    present = err.split("metrics present: ", 1)[1]
    assert "energy_per_item" in present and "latency_p90" in present
    # the same against a baseline directory: checked before any baseline is looked for
    code, _, err = _run(capsys, new, "--baseline", tmp_path / "none", "--fail", "enrgy:mean:5%")
    assert code == 2 and "carries the metric 'enrgy'" in err


def test_per_item_metric_on_window_reports_suggests_the_window_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Reports of energy-fixture tests carry window figures: energy_j, not energy_per_item.
    windows = synthetic_report(n_tests=3, metrics=("energy_j", "power_mean"), started_at=T0)
    for test in windows["tests"]:  # as the fixture records: energy_net_j is nearer by spelling
        gross = test["metrics"]["energy_j"]["samples"]
        test["metrics"]["energy_net_j"] = make_metric("energy_net_j", [x / 2 for x in gross])
    base = _save(tmp_path / "a.json", windows)
    code, out, err = _run(capsys, base, base, "--fail", "energy_per_item:mean:5%")
    assert code == 2 and out == ""
    assert "carries the metric 'energy_per_item' (did you mean 'energy_j'?)" in err


def test_statistic_that_does_not_exist_is_exit_2_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _save(tmp_path / "a.json", _quick_suite())
    code, out, err = _run(capsys, base, base, "--fail", "energy_per_item:meen:5%")
    assert code == 2 and out == ""
    assert "statistic 'meen' is not one of mean, median, min, max (did you mean 'mean'?)" in err


# -- a change every test shows is judged when each test has too few repeats -------------------


def test_uniform_rise_over_tests_with_two_repeats_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _quick_suite()
    base = _save(tmp_path / "a.json", report)
    worse = _save(tmp_path / "b.json", _scaled(report, 1.30))
    code, out, _ = _run(capsys, base, worse, "--fail", FAIL)
    assert code == 1, out
    assert "gate FAILED: 9 insufficient; suite-level: 1 regression" in out
    suite = next(line for line in out.splitlines() if line.startswith("suite: 9 tests"))
    assert "REGRESSION" in suite and "30.00" in suite

    slightly = _save(tmp_path / "c.json", _scaled(report, 1.01))
    code, out, _ = _run(capsys, base, slightly, "--fail", FAIL)
    assert code == 0, out
    assert "gate passed: 9 within; suite-level: 1 within" in out


def test_improvement_over_the_suite_is_listed_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _quick_suite()
    base = _save(tmp_path / "a.json", report)
    better = _save(tmp_path / "b.json", _scaled(report, 0.7))
    code, out, _ = _run(capsys, base, better, "--fail", FAIL)
    assert code == 0
    assert "suite-level: 1 improvement" in out


# -- insufficient results are counted, and fail a strict gate --------------------------------


def test_insufficient_is_counted_and_strict_gate_fails_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Three tests are too few for the suite-level test: nothing judges the +10 %.
    report = synthetic_report(repeats=2, n_tests=3, batch_sizes=(8,), gpu_freqs_hz=(612e6,))
    base = _save(tmp_path / "a.json", report)
    new = _save(tmp_path / "b.json", _scaled(report, 1.10))
    code, out, _ = _run(capsys, base, new, "--fail", FAIL)
    # Exit 0 as documented, but the headline says the gate decided nothing, why, and what
    # would fail it; never "gate passed".
    assert code == 0
    assert out.rstrip().splitlines()[-1] == (
        "gate NOT DECIDED: none of 3 rows could be decided (insufficient: not enough repeats "
        "to judge (2 baseline, 2 new; need >= 3 each and enough for p < 0.05)); "
        "--fail-insufficient would fail the gate"
    )
    assert "gate passed" not in out
    code, out, _ = _run(capsys, base, new, "--fail", FAIL, "--fail-insufficient")
    assert code == 1
    assert (
        "gate FAILED: 3 insufficient (strict: insufficient fails); not decided: not enough" in out
    )
    code, _, err = _run(capsys, base, new, "--fail-insufficient")
    assert code == 2 and "no gate is given (--fail)" in err


def test_a_gate_that_decided_some_rows_says_how_many_it_could_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two tests unchanged (within: their repeats spread well under 5 %), one 10 % higher
    # with 2 repeats a side, which cannot show it: the gate passed on what it decided only.
    report = synthetic_report(repeats=2, n_tests=3, batch_sizes=(8,), gpu_freqs_hz=(612e6,))
    changed = _scaled(report, 1.10)
    mixed = copy.deepcopy(changed)
    mixed["tests"][1:] = copy.deepcopy(report["tests"][1:])
    base = _save(tmp_path / "a.json", report)
    new = _save(tmp_path / "b.json", mixed)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = _run(capsys, base, new, "--fail", FAIL, "--format", "markdown")
    assert code == 0
    expected = (
        "gate passed on 2 of 3 rows (2 within); 1 could not be decided (insufficient: not "
        "enough repeats to judge (2 baseline, 2 new; need >= 3 each and enough for "
        "p < 0.05)); --fail-insufficient would fail the gate"
    )
    assert out.rstrip().splitlines()[-1] == f"- {expected}"
    # the step summary says the same
    assert summary.read_text(encoding="utf-8").rstrip().splitlines()[-1] == f"- {expected}"


# -- a baseline directory's run-to-run spread ---------------------------------------------


def _noisy_runs(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """Five baseline runs whose level moves from run to run (a busy host), each with tight
    repeats, in a directory; and the run they were scaled from."""
    report = synthetic_report(repeats=5, noise=0.01, started_at=T0, seed=3)
    folder = tmp_path / "baselines"
    folder.mkdir()
    for hour, factor in enumerate((0.90, 1.08, 0.95, 1.12, 1.00), start=1):
        _save(folder / f"run{hour}.json", _scaled(report, factor, hours=hour))
    return folder, report


def test_host_noise_between_runs_is_no_regression_against_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, report = _noisy_runs(tmp_path)
    rerun = _save(tmp_path / "rerun.json", _scaled(report, 1.12, hours=9))
    # Against the newest run alone, its repeats say +12 % is real.
    code, out, _ = _run(capsys, rerun, "--baseline", folder / "run5.json", "--fail", FAIL)
    assert code == 1 and "REGRESSION" in out
    code, out, _ = _run(capsys, rerun, "--baseline", folder, "--fail", FAIL)
    assert code == 0, out
    assert f"against {folder} (5 runs of this device, newest run5.json)" in out
    assert "a change must be outside their run-to-run spread" in out
    assert "REGRESSION" not in out


def test_a_real_change_is_caught_against_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, report = _noisy_runs(tmp_path)
    worse = _save(tmp_path / "worse.json", _scaled(report, 1.45, hours=9))
    code, out, _ = _run(capsys, worse, "--baseline", folder, "--fail", FAIL)
    assert code == 1, out
    rows = [line for line in out.splitlines() if "REGRESSION" in line]
    assert len(rows) == len(report["tests"])
    assert all("5 baseline runs, run-to-run spread" in row for row in rows)


# -- first run, empty output, counted nouns -----------------------------------------------


def test_missing_or_empty_baseline_directory_is_no_baseline_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = _save(tmp_path / "new.json", synthetic_report(repeats=5))
    missing = tmp_path / "baselines"
    code, out, err = _run(capsys, new, "--baseline", missing, "--fail", FAIL)
    assert code == 0 and err == ""
    said = " ".join(out.split())  # the notes as one text, however wrapped
    assert f"no baseline yet: {missing} does not exist; this run is not gated" in said
    missing.mkdir()
    code, out, _ = _run(capsys, new, "--baseline", missing, "--fail", FAIL)
    assert code == 0 and f"no baseline yet: {missing} holds no reports" in " ".join(out.split())
    code, _, err = _run(capsys, new, "--baseline", tmp_path / "base.json", "--fail", FAIL)
    assert code == 2 and "baseline file does not exist" in err


def test_passing_gate_shows_what_it_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = synthetic_report(repeats=5, started_at=T0)
    base = _save(tmp_path / "a.json", report)
    same = _save(tmp_path / "b.json", _scaled(report, 1.0))
    code, out, _ = _run(capsys, base, same, "--fail", FAIL)
    assert code == 0
    gate = out[out.index("Energy gate:") :].splitlines()
    assert gate[1] == "same on every row: metric energy_per_item:mean; threshold 5%"
    assert gate[2].split() == ["test", "baseline", "new", "change", "%", "verdict"]
    rows = [line for line in gate if "::" in line and line.endswith(" within")]
    assert len(rows) == 8 and all(" +0.00 " in row for row in rows)
    assert gate[-1] == "gate passed: 8 within"
    code, out, _ = _run(capsys, base, same, "--fail", FAIL, "--format", "markdown")
    gate = out[out.index("### Energy gate:") :].splitlines()
    assert sum(line.endswith(" | within |") for line in gate) == 8
    assert "- gate passed: 8 within" in gate


def test_summary_counts_singular_and_plural(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = synthetic_report(repeats=5, noise=0.01, started_at=T0)
    base = _save(tmp_path / "a.json", report)
    new = _scaled(report, 1.0)
    for test in new["tests"][:2]:
        test["metrics"]["energy_per_item"] = _times(test["metrics"]["energy_per_item"], 1.5)
    two = _save(tmp_path / "b.json", new)
    code, out, _ = _run(capsys, base, two, "--fail", FAIL)
    assert code == 1
    assert re.search(r"gate FAILED: 2 regressions, 6 within$", out, re.M), out
    new["tests"][1] = copy.deepcopy(report["tests"][1])
    one = _save(tmp_path / "c.json", new)
    code, out, _ = _run(capsys, base, one, "--fail", FAIL)
    assert re.search(r"gate FAILED: 1 regression, 7 within$", out, re.M), out
