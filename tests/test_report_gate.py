"""The statistical regression gate."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.present.verdict import render_verdict
from pytest_edgeenergy.report.baselines import find_baseline, save_baseline
from pytest_edgeenergy.report.keys import op_key
from pytest_edgeenergy.report.load import ReportError, load_report
from pytest_edgeenergy.report.metric_names import name_problem, possible
from pytest_edgeenergy.report.model import HIGHER_IS_BETTER, make_metric
from pytest_edgeenergy.verdict import BaselineDir, judge
from pytest_edgeenergy.verdict.expr import GateExpr, GateExprError, parse_expr, unit_family
from pytest_edgeenergy.verdict.independent import evaluate

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _pair(
    scale: float, repeats: int, noise: float = 0.02, **kw: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    base = synthetic_report(seed=1, repeats=repeats, noise=noise, **kw)
    new = synthetic_report(seed=2, repeats=repeats, noise=noise, energy_scale=scale, **kw)
    return base, new


# -- expressions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "threshold", "relative", "family"),
    [
        ("energy_per_item:mean:5%", 0.05, True, None),
        ("energy_j:median:0.02J", 0.02, False, "J"),
        ("energy_per_item:mean:3mJ", 0.003, False, "J"),
        ("latency_p90:mean:10ms", 0.01, False, "s"),
        ("latency_p99:max:250us", 250e-6, False, "s"),
        ("power_mean:mean:0.5W", 0.5, False, "W"),
        ("memory_peak:max:50MB", 50e6, False, "B"),
        ("memory_peak:max:1GiB", 2**30, False, "B"),
        ("throughput:mean:2items/s", 2.0, False, "items/s"),
        ("edp:mean:0.01J*s", 0.01, False, "J·s"),
        ("custom_metric:min:1.5e-3W", 1.5e-3, False, "W"),
    ],
)
def test_parse_expr_forms(text: str, threshold: float, relative: bool, family: str | None) -> None:
    expr = parse_expr(text)
    assert expr.threshold == pytest.approx(threshold)
    assert expr.relative is relative and expr.family == family
    assert expr.text == text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("energy_per_item", "three parts"),
        ("energy_per_item:mean", "three parts"),
        ("energy_per_item:avg:5%", "statistic 'avg' is not one of mean, median, min, max"),
        ("energy_per_item:mean:5", "unit '' is not|not a number followed by"),
        ("energy_per_item:mean:-5%", "not a number followed by"),
        ("energy_per_item:mean:5furlongs", "unit 'furlongs' is not a known unit"),
        ("latency_p90:mean:5J", "unit 'J' measures J but latency_p90 is in s"),
        ("energy_per_item:mean:1W", "measures W but energy_per_item is in J/item"),
        ("9metric:mean:5%", "not a metric name"),
    ],
)
def test_bad_expr_lists_allowed_forms(text: str, why: str) -> None:
    with pytest.raises(GateExprError, match=why) as info:
        parse_expr(text)
    assert "allowed gate expressions are METRIC:STATISTIC:THRESHOLD" in str(info.value)
    assert "10ms" in str(info.value)


@given(st.text(max_size=40))
def test_parse_expr_only_raises_its_own_error(text: str) -> None:
    with contextlib.suppress(GateExprError):
        parse_expr(text)


# -- metric names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["energy_per_item", "duration_s", "load.energy_j", "energy_j.VDD_IN", "bs64.latency_p90",
     "load.energy_j.VDD_CPU_GPU_CV", "steady#2.throughput"],
)  # fmt: skip
def test_names_the_plugin_can_record(name: str) -> None:
    assert possible(name) and name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("enrgy_per_item", "energy_per_item"),
        ("latency_p95", "latency_p99"),
        ("load.enrgy_j", "load.energy_j"),
        ("energy_per_item.VDD_IN", None),
        ("energy_j.", None),
    ],
)
def test_names_that_cannot_exist_get_a_hint(name: str, hint: str | None) -> None:
    assert not possible(name)
    problem = name_problem(name)
    assert problem is not None and "known metrics: " in problem and "energy_j.RAIL" in problem
    if hint is not None:
        assert f"(did you mean '{hint}'?)" in problem


def test_metric_no_result_carries_is_an_expression_error_listing_names() -> None:
    base, new = _pair(1.0, repeats=5)
    with pytest.raises(GateExprError) as info:
        evaluate(base, new, ["energy_per_item:mean:5%", "enrgy_per_item:mean:5%"])
    message = str(info.value)
    assert "'enrgy_per_item:mean:5%': no result of this run carries the metric" in message
    assert "(did you mean 'energy_per_item'?)" in message
    assert "metrics present: edp, energy_j, energy_per_item, latency_mean" in message
    # A report where nothing was measured is "nothing compared", not a usage error.
    for test in new["tests"]:
        test["status"], test["metrics"] = "skipped", {}
    verdict = evaluate(base, new, ["enrgy_per_item:mean:5%"])
    assert verdict.rows == [] and "nothing compared" in render_verdict(verdict)


def test_throughput_behind_a_label_is_higher_is_better() -> None:
    base, new = _pair(1.0, repeats=8, noise=0.005)
    for report, factor in ((base, 1.0), (new, 0.8)):
        for test in report["tests"]:
            samples = [x * factor for x in test["metrics"]["throughput"]["samples"]]
            test["metrics"]["bs64.throughput"] = make_metric("throughput", samples)
    verdict = evaluate(base, new, ["bs64.throughput:mean:5%"])
    assert verdict.count("regression") == len(new["tests"])


# -- statistics -----------------------------------------------------------------------------


def test_real_regression_with_ten_repeats_fails() -> None:
    base, new = _pair(1.10, repeats=10)
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    assert verdict.failed
    assert verdict.count("regression") == len(new["tests"])
    row = verdict.rows[0]
    assert row.change_pct == pytest.approx(10, abs=3)
    assert row.p_value is not None and row.p_value < 0.05


def test_same_size_change_with_two_repeats_is_insufficient_not_failure() -> None:
    base, new = _pair(1.10, repeats=2)
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    assert not verdict.failed
    assert {r.verdict for r in verdict.rows} == {"insufficient"}
    assert "not enough repeats to judge (2 baseline, 2 new" in verdict.rows[0].note


def test_noise_of_the_same_size_with_few_repeats_does_not_fail() -> None:
    base, new = _pair(1.0, repeats=2, noise=0.10)
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    assert not verdict.failed
    assert {r.verdict for r in verdict.rows} <= {"within", "insufficient"}


def test_three_against_three_cannot_reach_significance() -> None:
    base, new = _pair(1.5, repeats=3)
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    assert {r.verdict for r in verdict.rows} == {"insufficient"}
    four = evaluate(*_pair(1.5, repeats=4), ["energy_per_item:mean:5%"])
    assert four.failed


def test_noise_wider_than_the_threshold_is_insufficient_not_within() -> None:
    # Repeats spreading ~15 % cannot show a 2 % change either way: "within" would be a
    # verdict the repeats cannot give (it was, before: a lenient gate passed it silently).
    base, new = _pair(1.0, repeats=10, noise=0.15)
    verdict = evaluate(base, new, ["energy_per_item:mean:2%"])
    over = [r for r in verdict.rows if r.p_value is not None]
    assert over, "the noise should push some means over 2 %"
    assert not verdict.failed
    assert all("not significant" in r.note for r in over)
    assert {r.verdict for r in verdict.rows} == {"insufficient"}
    assert all("more than the 2% threshold" in r.note for r in verdict.rows)
    assert evaluate(base, new, ["energy_per_item:mean:2%"], strict=True).failed


def test_improvement_is_listed_and_does_not_fail() -> None:
    verdict = evaluate(*_pair(0.85, repeats=8), ["energy_per_item:mean:5%"])
    assert not verdict.failed
    assert verdict.count("improvement") == len(verdict.rows)


def test_small_change_is_within() -> None:
    verdict = evaluate(*_pair(1.01, repeats=8, noise=0.001), ["energy_per_item:median:5%"])
    assert {r.verdict for r in verdict.rows} == {"within"}
    assert all(r.p_value is None for r in verdict.rows)


def test_absolute_thresholds_in_units() -> None:
    # resnet18 energy per item is ~0.12 J: +10 % is ~0.012 J.
    base, new = _pair(1.10, repeats=10, workloads=("resnet18",))
    assert not evaluate(base, new, ["energy_per_item:mean:20mJ"]).failed
    assert evaluate(base, new, ["energy_per_item:mean:5mJ"]).failed
    assert not evaluate(base, new, ["latency_p90:mean:1ms"]).failed  # latency unchanged


def test_throughput_drop_is_a_regression() -> None:
    base = synthetic_report(seed=1, repeats=10)
    new = synthetic_report(seed=2, repeats=10)
    for test in new["tests"]:
        metric = test["metrics"]["throughput"]
        metric["samples"] = [x * 0.8 for x in metric["samples"]]
        metric["stats"]["mean"] *= 0.8
    verdict = evaluate(base, new, ["throughput:mean:5%"])
    assert verdict.failed and verdict.count("regression") == len(new["tests"])


def test_per_test_override_replaces_the_global_threshold() -> None:
    base, new = _pair(1.10, repeats=10)
    lenient = new["tests"][0]["id"]
    verdict = evaluate(
        base,
        new,
        ["energy_per_item:mean:5%"],
        overrides={lenient: ["energy_per_item:mean:30%", "power_mean:mean:50%"]},
    )
    by_test = {(r.test_id, r.metric): r for r in verdict.rows}
    assert by_test[(lenient, "energy_per_item")].verdict == "within"
    assert by_test[(lenient, "energy_per_item")].threshold == "30%"
    assert (lenient, "power_mean") in by_test
    others = [r for r in verdict.rows if r.test_id != lenient]
    assert others and all(r.verdict == "regression" for r in others)
    strict = evaluate(
        *_pair(1.03, repeats=10, noise=0.005),
        ["energy_per_item:mean:5%"],
        overrides={lenient: ["energy_per_item:mean:1%"]},
    )
    assert [r.test_id for r in strict.rows if r.verdict == "regression"] == [lenient]


def test_other_device_is_never_a_baseline() -> None:
    base = synthetic_report(sim_model="nano", seed=1, repeats=10)
    new = synthetic_report(sim_model="agx-orin", seed=2, repeats=10, energy_scale=2.0)
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"], baseline_name="nano.json")
    assert not verdict.failed and verdict.rows == [] and not verdict.device_matched
    assert (
        "no baseline for this device: nano.json is from sim:nano (simulated)" in verdict.messages[0]
    )


def test_other_operating_point_has_no_baseline() -> None:
    base = synthetic_report(seed=1, repeats=10, gpu_freqs_hz=(612e6,))
    new = synthetic_report(seed=2, repeats=10, gpu_freqs_hz=(612e6, 918e6), energy_scale=1.2)
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    assert verdict.count("no-baseline") == verdict.count("regression") > 0
    assert verdict.failed


def test_invalid_results_are_insufficient() -> None:
    base, new = _pair(1.5, repeats=10)
    new["tests"][0]["status"] = "invalid"
    base["tests"][1]["status"] = "failed"
    new["tests"][2]["status"] = "skipped"
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    notes = {r.test_id: r.note for r in verdict.rows}
    assert notes[new["tests"][0]["id"]] == "new result is invalid"
    assert notes[new["tests"][1]["id"]] == "baseline result is failed"
    assert new["tests"][2]["id"] not in notes


def test_unit_mismatch_on_unknown_metric_is_an_expression_error() -> None:
    base, new = _pair(1.0, repeats=4)
    for report in (base, new):
        for test in report["tests"]:
            test["metrics"]["temp"] = {"unit": "C", "value": 50.0, "stats": None, "samples": []}
    with pytest.raises(GateExprError, match="unit J does not match temp in C"):
        evaluate(base, new, ["temp:mean:1J"])


# -- suites and several baseline runs -------------------------------------------------------


def _times(report: dict[str, Any], factor: float, hour: int, tests: int | None = None) -> Any:
    """Another run of ``report`` with the energy per item of its first ``tests`` tests (all:
    None) times ``factor``."""
    out = json.loads(json.dumps(report))
    out["run_id"] = f"{hour:08x}" + out["run_id"][8:]
    out["started_at"] = (T0 + timedelta(hours=hour)).isoformat().replace("+00:00", "Z")
    for test in out["tests"][:tests]:
        metric = test["metrics"]["energy_per_item"]
        metric["samples"] = [x * factor for x in metric["samples"]]
        for key in ("mean", "median", "min", "max"):
            metric["stats"][key] *= factor
    return out


def _one_op(n_tests: int, repeats: int, noise: float = 0.02) -> dict[str, Any]:
    return synthetic_report(
        n_tests=n_tests, repeats=repeats, noise=noise, batch_sizes=(8,), gpu_freqs_hz=(612e6,)
    )


def test_suite_row_judges_a_change_every_test_shows() -> None:
    base = _one_op(9, repeats=2)
    verdict = evaluate(base, _times(base, 1.3, 1), ["energy_per_item:mean:5%"])
    assert verdict.count("insufficient") == 9 and verdict.failed
    (row,) = verdict.suite
    assert row.test_id.startswith("suite: 9 tests at ") and row.verdict == "regression"
    assert row.change_pct == pytest.approx(30.0)
    assert row.p_value == pytest.approx(1 / 2**9)
    better = evaluate(base, _times(base, 0.7, 1), ["energy_per_item:mean:5%"])
    assert [r.verdict for r in better.suite] == ["improvement"] and not better.failed


def test_suite_row_needs_enough_tests_and_a_relative_threshold() -> None:
    four = _one_op(4, repeats=2)
    assert evaluate(four, _times(four, 1.3, 1), ["energy_per_item:mean:5%"]).suite == []
    nine = _one_op(9, repeats=2)
    absolute = evaluate(nine, _times(nine, 1.3, 1), ["energy_per_item:mean:1mJ"])
    assert absolute.suite == [] and not absolute.failed


def test_several_runs_judge_by_their_spread_and_pool_it() -> None:
    base = _one_op(9, repeats=5, noise=0.01)
    runs = [_times(base, f, hour) for hour, f in enumerate((0.93, 1.06, 0.97, 1.05, 1.0), 1)]
    newest_first = runs[::-1]
    # +20 % on every test: outside a ~5 % spread for each test, and for the suite.
    moved = evaluate(newest_first, _times(base, 1.2, 9), ["energy_per_item:mean:5%"])
    assert moved.runs == 5 and moved.count("regression") == 9
    assert [r.verdict for r in moved.suite] == ["regression"]
    assert all("5 baseline runs, run-to-run spread" in r.note for r in moved.rows)
    # One test whose runs scatter widely is judged by its own, wider spread.
    factors = (0.7, 1.3, 0.8, 1.25, 1.0)
    wild = [_times(r, f, h, tests=1) for h, (r, f) in enumerate(zip(runs, factors, strict=True))]
    judged = evaluate(wild[::-1], _times(base, 1.2, 9), ["energy_per_item:mean:5%"])
    by_test = {r.test_id: r for r in judged.rows}
    # ~25 % between runs: +20 % is inside that noise, and so wide a spread cannot tell a
    # 5 % change either: insufficient, not within.
    assert by_test[base["tests"][0]["id"]].verdict == "insufficient"
    assert "the runs spread more than the 5% threshold" in by_test[base["tests"][0]["id"]].note
    assert by_test[base["tests"][1]["id"]].verdict == "regression"


def test_suite_change_inside_the_runs_spread_is_within() -> None:
    base = _one_op(9, repeats=5, noise=0.01)
    runs = [_times(base, f, hour) for hour, f in enumerate((0.88, 1.10, 0.95, 1.12, 1.0), 1)]
    verdict = evaluate(runs[::-1], _times(base, 1.12, 9), ["energy_per_item:mean:5%"])
    assert not verdict.failed
    (row,) = verdict.suite
    assert row.verdict == "within" and "against the spread of 5 baseline runs" in row.note
    # The same shift against one of those runs alone: every test, and the suite, regress.
    single = evaluate(runs[-1], _times(base, 1.12, 9), ["energy_per_item:mean:5%"])
    assert single.count("regression") == 9 and single.suite[0].verdict == "regression"


def test_a_test_in_one_baseline_run_only_is_judged_by_its_repeats() -> None:
    base = _one_op(9, repeats=5, noise=0.01)
    older = _times(base, 1.0, 1)
    older["tests"] = older["tests"][1:]
    verdict = evaluate(
        [_times(base, 1.0, 2), older], _times(base, 1.3, 9), ["energy_per_item:mean:5%"]
    )
    first = next(r for r in verdict.rows if r.test_id == base["tests"][0]["id"])
    assert first.verdict == "regression" and first.note == ""  # Mann-Whitney, one run
    others = [r for r in verdict.rows if r.test_id != base["tests"][0]["id"]]
    assert all("2 baseline runs" in r.note for r in others)


# -- baselines on disk ----------------------------------------------------------------------


def _save(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(report))
    return path


def test_baseline_directory_picks_newest_of_the_same_device(tmp_path: Path) -> None:
    old = synthetic_report(seed=1, repeats=10, started_at=T0)
    newest = synthetic_report(seed=2, repeats=10, started_at=T0 + timedelta(days=2))
    other = synthetic_report(sim_model="nano", seed=3, started_at=T0 + timedelta(days=5))
    _save(tmp_path / "a.json", old)
    _save(tmp_path / "b.json", newest)
    _save(tmp_path / "c.json", other)
    (tmp_path / "broken.json").write_text("{")
    run = synthetic_report(seed=4, repeats=10, started_at=T0 + timedelta(days=9))
    path, report, messages = find_baseline(tmp_path, run)
    assert path == tmp_path / "b.json" and report is not None
    assert report["run_id"] == newest["run_id"]
    assert any("broken.json: truncated" in m for m in messages)
    verdict = judge(BaselineDir(tmp_path), run, ["energy_per_item:mean:5%"])
    assert verdict.baseline == f"{tmp_path} (2 runs of this device, newest b.json)"
    assert verdict.runs == 2 and not verdict.failed
    single = judge(BaselineDir(tmp_path, runs=1), run, ["energy_per_item:mean:5%"])
    assert single.baseline == str(tmp_path / "b.json") and single.runs == 1


def test_no_baseline_for_this_device_is_a_message(tmp_path: Path) -> None:
    _save(tmp_path / "nano.json", synthetic_report(sim_model="nano"))
    run = synthetic_report(sim_model="orin-nano")
    verdict = judge(BaselineDir(tmp_path), run, ["energy_per_item:mean:5%"])
    assert not verdict.failed and not verdict.device_matched
    assert "no baseline for this device (sim:orin-nano (simulated)" in verdict.messages[-1]
    file_verdict = judge(BaselineDir(tmp_path / "nano.json"), run, ["energy_per_item:mean:5%"])
    assert "no baseline for this device" in file_verdict.messages[0]
    with pytest.raises(ReportError, match="baseline file does not exist"):
        judge(BaselineDir(tmp_path / "missing.json"), run, ["energy_per_item:mean:5%"])


def test_save_baseline(tmp_path: Path) -> None:
    report = synthetic_report(started_at=datetime(2025, 2, 3, 4, 5, 6, tzinfo=timezone.utc))
    source = _save(tmp_path / "run.json", report)
    saved = save_baseline(source, tmp_path / "baselines")
    assert saved.name == f"sim-agx-orin-20250203-040506-{report['run_id'][:8]}.json"
    assert load_report(saved) == load_report(source)
    assert save_baseline(source, tmp_path / "baselines") == saved  # idempotent
    impostor = synthetic_report(seed=9)
    impostor["run_id"] = report["run_id"][:8] + "0" * 24
    saved.write_text(json.dumps(impostor))
    with pytest.raises(ReportError, match="exists and holds another run; not replaced"):
        save_baseline(source, tmp_path / "baselines")
    empty = _save(tmp_path / "empty.json", synthetic_report(n_tests=0))
    with pytest.raises(ReportError, match=r"empty.json: has no test results"):
        save_baseline(empty, tmp_path / "baselines")


# -- rendering ------------------------------------------------------------------------------


def test_render_verdict_formats() -> None:
    verdict = evaluate(*_pair(1.10, repeats=10), ["energy_per_item:mean:5%"], new_name="new.json")
    text = render_verdict(verdict, "table")
    assert "REGRESSION" in text and "gate FAILED" in text and "new.json against" in text
    markdown = render_verdict(verdict, "markdown")
    assert markdown.startswith("### Energy gate") and "| REGRESSION |" in markdown
    rows = list(csv.DictReader(io.StringIO(render_verdict(verdict, "csv"))))
    assert len(rows) == len(verdict.rows)
    assert float(rows[0]["change %"]) == pytest.approx(verdict.rows[0].change_pct)
    assert "<table>" in render_verdict(verdict, "html")


# -- the gate on views judges exactly as the gate on whole reports first did ----------------


def _reference_evaluate(
    base_report: dict[str, Any],
    new_report: dict[str, Any],
    exprs: list[GateExpr],
    overrides: dict[str, list[GateExpr]],
) -> list[tuple[Any, ...]]:
    """The gate's rows as first written, reading whole test entries (fingerprints equal),
    and repeats spreading more than the threshold insufficient (issue 19)."""

    def statistic(metric: dict[str, Any], name: str) -> float | None:
        stats = metric.get("stats")
        value = stats.get(name) if stats else metric.get("value")
        return float(value) if value is not None else None

    def too_spread(e: GateExpr, *metrics: dict[str, Any]) -> tuple[str, str] | None:
        """Repeats spreading more than the threshold on either side: they cannot tell."""
        sides = []
        for side, metric in zip(("baseline", "new"), metrics, strict=True):
            stats = metric.get("stats")
            if not stats or stats["stdev"] is None:
                continue
            sd, mean = stats["stdev"], stats["mean"]
            if not e.relative:
                sides.append((side, sd, f"{sd:.3g}{e.family}"))
            else:
                spread = sd / abs(mean) if mean else (math.inf if sd > 0 else 0.0)
                sides.append((side, spread, f"{spread * 100:.2g} %"))
        if not any(spread > e.threshold for _, spread, _ in sides):
            return None
        words = " and ".join(f"{text} ({side})" for side, _, text in sides)
        note = (
            f"the repeats spread {words}, more than the {e.threshold_text} threshold: they "
            "cannot show a change of that size"
        )
        return "insufficient", note

    def judge(tid: str, e: GateExpr, base: dict[str, Any], new: dict[str, Any]) -> tuple[Any, ...]:
        head = (tid, e.metric, e.statistic, e.threshold_text)
        for side, test in (("new", new), ("baseline", base)):
            if test["status"] != "passed":
                note = f"{side} result is {test['status']}"
                return (*head, None, None, None, None, "insufficient", note)
        base_metric, new_metric = base["metrics"].get(e.metric), new["metrics"][e.metric]
        if base_metric is None:
            return (*head, None, None, None, None, "insufficient", f"baseline has no {e.metric}")
        if not e.relative and unit_family(new_metric["unit"]) != e.family:
            raise GateExprError("unit")
        b, n = statistic(base_metric, e.statistic), statistic(new_metric, e.statistic)
        if b is None or n is None:
            return (*head, b, n, None, None, "insufficient", "no value")
        delta = n - b
        change = delta / abs(b) * 100.0 if b != 0 else None
        if e.relative:
            over = (b != 0 and abs(delta) > e.threshold * abs(b)) or (b == 0 and delta != 0)
        else:
            over = abs(delta) > e.threshold
        spread = too_spread(e, base_metric, new_metric)
        if not over:
            return (*head, b, n, change, None, *(("within", "") if spread is None else spread))
        bs, ns = base_metric.get("samples") or [], new_metric.get("samples") or []
        if min(len(bs), len(ns)) < 3 or 1.0 / math.comb(len(bs) + len(ns), len(ns)) >= 0.05:
            note = (
                f"not enough repeats to judge ({len(bs)} baseline, {len(ns)} new; "
                "need >= 3 each and enough for p < 0.05)"
            )
            return (*head, b, n, change, None, "insufficient", note)
        higher_worse = e.metric not in HIGHER_IS_BETTER
        worse = (delta > 0) == higher_worse
        alternative = "greater" if higher_worse == worse else "less"
        from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

        p = float(mannwhitneyu(list(ns), list(bs), alternative=alternative).pvalue)
        if p >= 0.05:
            note = f"change not significant (p={p:.3g})"
            if spread is not None:
                return (*head, b, n, change, p, "insufficient", f"{note}; {spread[1]}")
            return (*head, b, n, change, p, "within", note)
        return (*head, b, n, change, p, "regression" if worse else "improvement", "")

    base_tests = {(t["id"], op_key(t["params"])): t for t in base_report["tests"]}
    rows = []
    for test in new_report["tests"]:
        if test["status"] == "skipped":
            continue
        own = overrides.get(test["id"])
        chosen = list(exprs)
        if own:
            replaced = {(e.metric, e.statistic) for e in own}
            chosen = [e for e in exprs if (e.metric, e.statistic) not in replaced] + own
        base = base_tests.get((test["id"], op_key(test["params"])))
        for e in chosen:
            if e.metric not in test["metrics"]:
                continue
            if base is None:
                head = (test["id"], e.metric, e.statistic, e.threshold_text)
                note = "no baseline result at this operating point"
                rows.append((*head, None, None, None, None, "no-baseline", note))
            else:
                rows.append(judge(test["id"], e, base, test))
    return rows


_EXPRS = [
    "energy_per_item:mean:5%",
    "latency_p90:median:10%",
    "throughput:min:1%",
    "edp:max:0.0001J*s",
    "energy_per_item:median:3mJ",
    "power_mean:mean:0%",
]


@settings(max_examples=60, deadline=None)
@given(
    scale=st.sampled_from([0.8, 1.0, 1.02, 1.3]),
    repeats=st.sampled_from([2, 3, 5]),
    changes=st.lists(
        st.tuples(
            st.integers(0, 15),
            st.sampled_from(["failed", "skipped", "no metric", "no stats", "zero", "none", "op"]),
            st.booleans(),
        ),
        max_size=8,
    ),
    chosen=st.lists(st.sampled_from(_EXPRS), min_size=1, max_size=4, unique=True),
    override=st.booleans(),
)
def test_views_judge_as_whole_reports_did(
    scale: float,
    repeats: int,
    changes: list[tuple[int, str, bool]],
    chosen: list[str],
    override: bool,
) -> None:
    base, new = _pair(scale, repeats=repeats, noise=0.05, workloads=("resnet18", "alexnet"))
    for index, change, on_new in changes:
        test = (new if on_new else base)["tests"][index % len(base["tests"])]
        metric = test["metrics"].get("energy_per_item")
        if change in ("failed", "skipped"):
            test["status"] = change
        elif change == "op":
            test["params"]["operating_point"]["requested"]["gpu_freq_hz"] = 1
        elif metric is None:
            continue
        elif change == "no metric":
            del test["metrics"]["energy_per_item"]
        elif change == "no stats":
            metric["stats"] = None
        elif change == "zero":
            metric["value"] = 0.0
            if metric["stats"]:
                metric["stats"]["mean"] = 0.0
        else:
            metric["value"], metric["stats"] = None, None
    exprs = [parse_expr(e) for e in chosen]
    overrides = (
        {base["tests"][1]["id"]: [parse_expr("energy_per_item:mean:50%")]} if override else {}
    )
    measured = [t["metrics"] for t in new["tests"] if t["status"] != "skipped"]
    lost = any(measured) and not any("energy_per_item" in m for m in measured)
    if lost and (overrides or any(e.metric == "energy_per_item" for e in exprs)):
        # Every result lost the metric: a usage error now, where the first gate was silent.
        with pytest.raises(GateExprError, match="metrics present"):
            evaluate(base, new, exprs, overrides)
        return
    verdict = evaluate(base, new, exprs, overrides)
    assert [tuple(r) for r in verdict.rows] == _reference_evaluate(base, new, exprs, overrides)
