"""The verdict of interleaved A/B rounds (report/paired.py): rows, rounds until sure, and the
false-alarm control of its sequential rule, on synthetic reports built with the project's
own builders (valid reports, as ``load_report`` returns them)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.present.verdict import render_verdict
from pytest_edgeenergy.report.load import check_report
from pytest_edgeenergy.report.model import (
    DeviceInfo,
    build_device,
    build_header,
    build_result,
    build_validity,
    make_metric,
)
from pytest_edgeenergy.verdict.expr import GateExprError
from pytest_edgeenergy.verdict.model import GateVerdict, PairedVerdict
from pytest_edgeenergy.verdict.paired import (
    look_alpha,
    paired_verdict,
    spent_alpha,
    trimmed_centre,
)
from pytest_edgeenergy.verdict.stats import t_isf, t_sf

Pair = tuple[dict[str, Any], dict[str, Any]]
ORIN = Identity(
    model="NVIDIA Jetson Orin Nano", soc="tegra234", simulated=True, sim_model="orin-nano"
)
MEDIAN_5 = "energy_per_item:median:5%"


def _device(identity: Identity = ORIN) -> DeviceInfo:
    return build_device(identity, RailMap(rails=(), total_rail="VDD_IN"))


def _report(
    tests: Mapping[str, Sequence[float]],
    *,
    statuses: Mapping[str, str] | None = None,
    metric: str = "energy_per_item",
    device: DeviceInfo | None = None,
    check: bool = True,
) -> dict[str, Any]:
    """A report holding ``tests`` (id -> the repeats' samples of ``metric``)."""
    header = build_header(device or _device(), command_line=["pytest"])
    results = [
        build_result(
            test_id,
            status=(statuses or {}).get(test_id, "passed"),  # type: ignore[arg-type]
            params={"workload": "resnet18", "batch_size": 1},
            metrics={metric: make_metric(metric, samples)},
            validity=build_validity(samples=50, valid=True),
            duration_s=1.0,
        )
        for test_id, samples in tests.items()
    ]
    doc = {**header, "tests": results}
    if not check:
        return doc
    return check_report(json.loads(json.dumps(doc)), "synthetic")


def _around(value: float) -> list[float]:
    """Three repeats whose median is ``value``."""
    return [value * 0.99, value, value * 1.01]


def _rounds(per_test: Mapping[str, Sequence[tuple[float, float]]], **kw: Any) -> list[Pair]:
    """Reports of rounds: per test, per round, the (A, B) medians."""
    count = max(len(v) for v in per_test.values())
    pairs = []
    for r in range(count):
        a = {t: _around(v[r][0]) for t, v in per_test.items() if r < len(v)}
        b = {t: _around(v[r][1]) for t, v in per_test.items() if r < len(v)}
        pairs.append((_report(a, **kw), _report(b, **kw)))
    return pairs


def _steady(ratio: float, wobble: Sequence[float]) -> list[tuple[float, float]]:
    """Rounds of a test whose B is ``ratio`` times A, times exp(wobble[i]) in round i, on a
    drifting board (A moves round to round: the pairing must cancel it)."""
    return [
        (0.1 * (1 + 0.2 * i), 0.1 * (1 + 0.2 * i) * ratio * math.exp(w))
        for i, w in enumerate(wobble)
    ]


def _row(verdict: GateVerdict, test_id: str) -> Any:
    (row,) = [r for r in verdict.rows if r.test_id == test_id]
    return row


# -- the t distribution, the spending and the trimmed centre --------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 8, 9, 30])
def test_student_t_matches_scipy(df: int) -> None:
    from scipy.stats import t as student_t  # type: ignore[import-untyped]

    # scipy's own functions without scipy.stats' per-call overhead: the same numbers.
    for x in (-4.0, -0.3, 0.0, 0.8, 2.9, 12.0):
        assert t_sf(x, df) == pytest.approx(student_t.sf(x, df), rel=1e-12, abs=1e-15)
    for p in (0.0005, 0.0048, 0.0208, 0.05, 0.2):
        assert t_isf(p, df) == pytest.approx(student_t.isf(p, df), rel=1e-12)


def test_pocock_spending_sums_to_alpha_and_spends_most_at_the_first_look() -> None:
    levels = [look_alpha(0.05, n, 3, 10) for n in range(3, 11)]
    assert math.fsum(levels) == pytest.approx(0.05)
    assert levels[0] == pytest.approx(0.05 * math.log1p((math.e - 1) * 0.3))
    assert levels[0] > 3 * max(levels[1:])
    assert spent_alpha(0.05, 3, 3) == pytest.approx(0.05)  # one look: all of alpha


def test_trimmed_centre_is_the_plain_t_below_five_rounds_and_drops_outliers_from_five() -> None:
    three = trimmed_centre([0.01, 0.03, 0.02])
    assert three.centre == pytest.approx(0.02)
    assert three.se == pytest.approx(0.01 / math.sqrt(3))
    assert (three.df, three.kept) == (2, (0, 1, 2))
    five = trimmed_centre([0.01, 0.5, 0.02, 0.03, -0.4])
    assert five.centre == pytest.approx(0.02)  # round 2 (+0.5) and round 5 (-0.4) left out
    assert five.kept == (0, 2, 3) and five.df == 2
    winsorized = [0.01, 0.03, 0.02, 0.03, 0.01]
    expected = math.sqrt(4 * float(np.var(winsorized, ddof=1)) / (3 * 2))
    assert five.se == pytest.approx(expected)


# -- rows and verdicts ----------------------------------------------------------------------


def _four_tests() -> list[Pair]:
    return _rounds(
        {
            "t::slower": _steady(1.20, [0.01, -0.01, 0.0]),
            "t::same": _steady(1.0, [0.004, -0.003, 0.001]),
            "t::faster": _steady(0.80, [0.01, -0.01, 0.0]),
            "t::near": _steady(1.05, [0.03, -0.04, 0.02]),
        }
    )


def test_rows_verdicts_and_the_undecided_test_near_the_threshold() -> None:
    verdict = paired_verdict(_four_tests(), [MEDIAN_5], base="main", head="pr")
    assert isinstance(verdict, PairedVerdict) and isinstance(verdict, GateVerdict)
    slower = _row(verdict, "t::slower")
    assert slower.verdict == "regression"
    assert slower.change_pct == pytest.approx(20.0, abs=0.5)
    # baseline and new: geometric means of the per-round medians, new/baseline = the change
    assert slower.new / slower.baseline - 1 == pytest.approx(slower.change_pct / 100)
    assert slower.baseline == pytest.approx(math.exp(np.mean(np.log([0.1, 0.12, 0.14]))))
    assert _row(verdict, "t::same").verdict == "within"
    assert _row(verdict, "t::faster").verdict == "improvement"
    near = _row(verdict, "t::near")
    assert near.verdict == "insufficient" and "needs more rounds" in near.note
    assert verdict.undecided == ["t::near"]
    assert verdict.rounds == {"t::slower": 3, "t::same": 3, "t::faster": 3, "t::near": 3}
    assert verdict.failed  # a regression: exit 1
    assert (verdict.baseline, verdict.new) == ("main", "pr")


def test_verdict_renders_through_render_verdict() -> None:
    verdict = paired_verdict(_four_tests(), [MEDIAN_5])
    text = render_verdict(verdict, "table", all_rows=True)
    assert "Energy gate: head against base" in text
    assert "REGRESSION" in text and "t::slower" in text
    assert "needs more rounds" in text and "Pocock-type alpha spending" in text
    assert "1 test undecided after 3 rounds" in text
    markdown = render_verdict(verdict, "markdown")
    assert "slower" in markdown and "REGRESSION" in markdown
    assert "| near |" in markdown or "t::near" in markdown


def test_unchanged_tests_pass_and_a_drifting_board_cancels_out() -> None:
    # A moves 20 % a round; B follows it within 0.5 %: no change.
    pairs = _rounds({f"t::{i}": _steady(1.0, [0.004, -0.005, 0.002]) for i in range(3)})
    verdict = paired_verdict(pairs, [MEDIAN_5])
    assert [r.verdict for r in verdict.rows] == ["within"] * 3
    assert not verdict.failed and verdict.undecided == []


def test_more_rounds_only_for_the_undecided_then_insufficient_at_max_rounds() -> None:
    wobble = [0.06, -0.05, 0.07, -0.04, 0.06]
    pairs = _rounds(
        {"t::clear": _steady(1.3, [0.0, 0.01, -0.01]), "t::near": _steady(1.05, wobble[:3])}
    )
    first = paired_verdict(pairs, [MEDIAN_5], max_rounds=5)
    assert first.undecided == ["t::near"]
    # rounds 4 and 5 hold only the undecided test (as `edgeenergy ab` runs them)
    for w in wobble[3:]:
        (a, b) = _steady(1.05, [w])[0]
        pairs.append((_report({"t::near": _around(a)}), _report({"t::near": _around(b)})))
        verdict = paired_verdict(pairs, [MEDIAN_5], max_rounds=5)
    assert verdict.undecided == []  # max_rounds reached
    assert verdict.rounds == {"t::clear": 3, "t::near": 5}
    near = _row(verdict, "t::near")
    assert near.verdict == "insufficient"
    assert "undecided after 5 rounds" in near.note and "could not tell" in near.note
    assert "threshold inside" in near.note
    assert _row(verdict, "t::clear").verdict == "regression"
    strict = paired_verdict(pairs, [MEDIAN_5], max_rounds=5, strict=True)
    assert "1 insufficient, strict gate" in strict.failure_reason()


def test_undecided_is_insufficient_but_not_failed_in_a_lenient_gate() -> None:
    wobble = [0.06, -0.05, 0.07]
    pairs = _rounds({"t::near": _steady(1.05, wobble)})
    verdict = paired_verdict(pairs, [MEDIAN_5], max_rounds=3)
    assert verdict.undecided == [] and verdict.count("insufficient") == 1
    assert not verdict.failed
    assert paired_verdict(pairs, [MEDIAN_5], max_rounds=3, strict=True).failed
    text = render_verdict(verdict, "table")
    assert "could not tell" in text and "gate passed" not in text
    assert "gate NOT DECIDED: the one row could not be decided (insufficient: undecided" in text


def test_looks_are_replayed_so_one_call_on_all_rounds_agrees_with_a_call_per_round() -> None:
    rounds = _steady(1.25, [0.0, 0.02, -0.02, 0.01, 0.0, -0.01])
    pairs = _rounds({"t::x": rounds})
    once = paired_verdict(pairs, [MEDIAN_5], max_rounds=6)
    early = paired_verdict(pairs[:3], [MEDIAN_5], max_rounds=6)
    assert once.rows == early.rows  # decided at the first look both times
    assert once.rounds == {"t::x": 3}


def test_fewer_rounds_than_min_rounds_are_undecided() -> None:
    pairs = _rounds({"t::x": _steady(1.3, [0.0, 0.01])})
    verdict = paired_verdict(pairs, [MEDIAN_5])
    assert verdict.undecided == ["t::x"] and verdict.rounds == {"t::x": 2}
    assert "2 rounds so far, 3 needed" in _row(verdict, "t::x").note


def test_a_test_missing_from_a_round_is_judged_on_the_rounds_that_hold_it() -> None:
    pairs = _rounds(
        {"t::a": _steady(1.3, [0.0, 0.01, -0.01, 0.0]), "t::b": _steady(1.0, [0.0] * 4)}
    )
    b2 = pairs[1][1]
    b2["tests"] = [t for t in b2["tests"] if t["id"] != "t::a"]  # B of round 2 lacks t::a
    verdict = paired_verdict(pairs, [MEDIAN_5], max_rounds=4)
    assert verdict.rounds["t::a"] == 3 and verdict.rounds["t::b"] == 3
    assert _row(verdict, "t::a").verdict == "regression"
    assert "3 rounds" in _row(verdict, "t::a").note


@pytest.mark.parametrize(("side", "status"), [(0, "failed"), (1, "invalid"), (1, "error")])
def test_a_failed_or_invalid_result_on_a_side_is_insufficient(side: int, status: str) -> None:
    per_test = {"t::x": _steady(1.0, [0.0, 0.01, -0.01]), "t::y": _steady(1.0, [0.0] * 3)}
    pairs = _rounds(per_test)
    values = {t: _around(v[1][side]) for t, v in per_test.items()}
    broken = _report(values, statuses={"t::x": status})
    pairs[1] = (broken, pairs[1][1]) if side == 0 else (pairs[1][0], broken)
    verdict = paired_verdict(pairs, [MEDIAN_5])
    row = _row(verdict, "t::x")
    name = ("base", "head")[side]
    assert row.verdict == "insufficient"
    assert f"round 2: {name} result is {status}" in row.note
    assert verdict.undecided == []  # more rounds would not help
    assert _row(verdict, "t::y").verdict == "within"


def test_a_test_only_in_the_head_has_no_baseline() -> None:
    pairs = _rounds({"t::x": _steady(1.0, [0.0] * 3)})
    for _, b in pairs:
        b["tests"] = [*b["tests"], {**b["tests"][0], "id": "t::new"}]
    verdict = paired_verdict(pairs, [MEDIAN_5])
    assert _row(verdict, "t::new").verdict == "no-baseline"
    assert not verdict.failed and "t::new" not in verdict.undecided


def test_higher_is_better_metrics_are_mirrored() -> None:
    drop = _rounds({"t::x": _steady(0.8, [0.0, 0.01, -0.01])}, metric="throughput")
    verdict = paired_verdict(drop, ["throughput:median:5%"])
    assert _row(verdict, "t::x").verdict == "regression"
    rise = _rounds({"t::x": _steady(1.25, [0.0, 0.01, -0.01])}, metric="throughput")
    assert _row(paired_verdict(rise, ["throughput:median:5%"]), "t::x").verdict == "improvement"


def test_absolute_threshold_is_taken_against_the_baseline() -> None:
    # A about 1 J: +0.3 J is over a 0.1 J threshold, +0.01 J within it
    more = _rounds({"t::x": [(1.0, 1.3), (1.1, 1.41), (0.9, 1.19)]}, metric="energy_j")
    assert _row(paired_verdict(more, ["energy_j:median:0.1J"]), "t::x").verdict == "regression"
    same = _rounds({"t::x": [(1.0, 1.01), (1.1, 1.11), (0.9, 0.91)]}, metric="energy_j")
    assert _row(paired_verdict(same, ["energy_j:median:0.1J"]), "t::x").verdict == "within"
    with pytest.raises(GateExprError, match="unit"):
        paired_verdict(same, ["energy_j:median:10ms"])


def test_a_metric_no_result_carries_is_a_usage_error_and_bad_settings_are_refused() -> None:
    pairs = _rounds({"t::x": _steady(1.0, [0.0] * 3)})
    with pytest.raises(GateExprError, match="no result of head carries"):
        paired_verdict(pairs, ["latency_p90:median:5%"])
    with pytest.raises(ValueError, match="min_rounds 1 must be at least 2"):
        paired_verdict(pairs, [MEDIAN_5], min_rounds=1)
    with pytest.raises(ValueError, match="max_rounds 2 must be at least min_rounds 3"):
        paired_verdict(pairs, [MEDIAN_5], max_rounds=2)
    with pytest.raises(ValueError, match="alpha"):
        paired_verdict(pairs, [MEDIAN_5], alpha=0.0)


def test_rounds_on_different_devices_are_left_out() -> None:
    pairs = _rounds({"t::x": _steady(1.0, [0.0] * 3)})
    nano = Identity(model="NVIDIA Jetson Nano", soc="tegra210", simulated=True, sim_model="nano")
    other = _report({"t::x": _around(0.1)}, device=_device(nano))
    pairs[0] = (pairs[0][0], other)
    verdict = paired_verdict(pairs, [MEDIAN_5])
    assert any("round 1 left out" in m for m in verdict.messages)
    assert verdict.rounds == {"t::x": 2} and verdict.undecided == ["t::x"]
    assert not paired_verdict([], [MEDIAN_5]).rows


def test_own_expressions_replace_the_global_one() -> None:
    pairs = _rounds({"t::x": _steady(1.2, [0.0, 0.01, -0.01])})
    loose = {"t::x": ["energy_per_item:median:50%"]}
    verdict = paired_verdict(pairs, [MEDIAN_5], overrides=loose)
    assert [(r.threshold, r.verdict) for r in verdict.rows] == [("50%", "within")]


def test_suite_row_catches_a_change_each_test_is_too_noisy_to_show() -> None:
    rng = np.random.default_rng(7)
    per_test = {f"t::{i}": _steady(1.08, list(rng.normal(0, 0.05, 3))) for i in range(12)}
    verdict = paired_verdict(_rounds(per_test), [MEDIAN_5])
    (suite,) = verdict.suite
    assert suite.test_id == "suite: 12 tests at dvfs"
    assert suite.verdict == "regression" and (suite.change_pct or 0.0) > 5
    assert verdict.count("regression") < 12
    assert verdict.failed


# -- the false-alarm control of rounds until sure: a seeded Monte Carlo ----------------------
#
# Each simulated `edgeenergy ab` session has TESTS independent tests. Per round the board
# drifts (both sides of the round alike, 10 % sd), each side adds its own noise (2 % sd),
# and in one round of ten a burst of background load lands on one side only, raising its
# energy by 10-30 % (the duty-cycled hog of the issue). Each side records 5 repeats (1 %
# sd) and the gate reads their median. Rounds 1-3 hold every test; later rounds only the
# tests the verdict calls undecided, up to 10 rounds, as `edgeenergy ab` runs them.

TESTS = 25
ALPHA = 0.05


def _side(rng: np.random.Generator, level: float) -> list[float]:
    return [float(x) for x in level * np.exp(rng.normal(0.0, 0.01, 5))]


def _mc_round(rng: np.random.Generator, tests: Sequence[str], ratio: float) -> Pair:
    a: dict[str, list[float]] = {}
    b: dict[str, list[float]] = {}
    for test in tests:
        level = 0.1 * math.exp(rng.normal(0.0, 0.1))
        burst = [0.0, 0.0]
        if rng.random() < 0.1:
            burst[int(rng.integers(2))] = float(rng.uniform(0.1, 0.3))
        a[test] = _side(rng, level * math.exp(rng.normal(0.0, 0.02) + burst[0]))
        b[test] = _side(rng, level * ratio * math.exp(rng.normal(0.0, 0.02) + burst[1]))
    return _report(a, check=False), _report(b, check=False)


def _mc_session(rng: np.random.Generator, ratio: float, expr: str) -> PairedVerdict:
    """One session run as `edgeenergy ab` runs it: a verdict after each round from the
    third, the next round holding only the undecided tests."""
    tests = [f"t::{i}" for i in range(TESTS)]
    pairs = [_mc_round(rng, tests, ratio) for _ in range(2)]
    while True:
        pairs.append(_mc_round(rng, tests, ratio))
        verdict = paired_verdict(pairs, [expr], alpha=ALPHA)
        if not verdict.undecided:
            return verdict
        tests = verdict.undecided


def _rate(verdicts: Sequence[GateVerdict], outcome: str) -> float:
    rows = [r for v in verdicts for r in v.rows]
    return sum(r.verdict == outcome for r in rows) / len(rows)


def _margin(p: float, n: int) -> float:
    """A one-sided 99 % binomial margin around rate p over n trials."""
    return 2.33 * math.sqrt(p * (1 - p) / n)


def test_monte_carlo_unchanged_code_false_alarms_stay_under_alpha_across_the_looks() -> None:
    rng = np.random.default_rng(20)
    # A threshold of 0.1 % leaves the decision to the significance test alone.
    verdicts = [_mc_session(rng, 1.0, "energy_per_item:median:0.1%") for _ in range(40)]
    trials = 40 * TESTS
    assert _rate(verdicts, "regression") <= ALPHA + _margin(ALPHA, trials)
    assert max(max(v.rounds.values()) for v in verdicts) == 10  # extra rounds did happen
    # the realistic gate (5 %): hardly ever a false alarm, most tests decided early
    verdicts = [_mc_session(rng, 1.0, MEDIAN_5) for _ in range(20)]
    assert _rate(verdicts, "regression") <= ALPHA / 5
    assert _rate(verdicts, "within") >= 0.9
    mean_rounds = np.mean([n for v in verdicts for n in v.rounds.values()])
    assert mean_rounds < 5


def test_monte_carlo_a_ten_percent_regression_is_caught() -> None:
    rng = np.random.default_rng(21)
    verdicts = [_mc_session(rng, 1.10, MEDIAN_5) for _ in range(20)]
    assert _rate(verdicts, "regression") >= 0.95
    assert _rate(verdicts, "within") <= 0.01


def test_monte_carlo_a_peek_until_significant_loop_would_fail_the_same_check() -> None:
    """The check above can fail: testing every round at the full alpha (each look a fresh
    one-look verdict) raises more false alarms than alpha allows."""
    rng = np.random.default_rng(22)
    tests = [f"t::{i}" for i in range(TESTS)]
    alarms = 0
    sessions = 40
    for _ in range(sessions):
        pairs = [_mc_round(rng, tests, 1.0) for _ in range(10)]
        flagged: set[str] = set()
        decided: set[str] = set()
        for n in range(3, 11):
            naive = paired_verdict(
                pairs[:n], ["energy_per_item:median:0.1%"], min_rounds=n, max_rounds=n
            )
            for row in naive.rows:
                if row.test_id in decided:
                    continue
                if row.verdict == "regression":
                    flagged.add(row.test_id)
                if row.verdict != "insufficient":
                    decided.add(row.test_id)
        alarms += len(flagged)
    assert alarms / (sessions * TESTS) > ALPHA + _margin(ALPHA, sessions * TESTS)
