"""The regression gate: a change counts only when it is over a threshold AND significant.

An expression ``metric:statistic:threshold`` (see :data:`ALLOWED_FORMS`) names what to
watch. For each test of the new report the baseline test with the same id and operating
point, on the same device (fingerprint), is compared:

* ``within``: the change of the statistic is not over the threshold, or it is but the
  repeats do not show it is real (one-sided Mann-Whitney U, p >= alpha);
* ``insufficient``: over the threshold but too few repeats to judge (fewer than
  ``min_samples`` per side, or so few that no outcome could reach p < alpha: 3 vs 3 repeats
  cannot go below p = 0.05), or an invalid/failed result on either side; or a row that
  would be ``within`` while the spread of the repeats (their standard deviation, relative
  to their mean for a relative threshold; with several baseline runs, the run-to-run
  spread) is larger than the threshold: such repeats cannot show a change of that size;
* ``regression`` / ``improvement``: over the threshold and significant; "worse" means higher
  except for metrics in :data:`~pytest_edgeenergy.report.model.HIGHER_IS_BETTER`;
* ``no-baseline``: the baseline has no such test at that operating point.

With several baseline runs (a directory of earlier reports of the device), a test found
passed in two or more of them is judged against their run-to-run spread instead (see
:func:`.stats.between_runs_p`): repeats inside one run understate the noise between
runs. For each operating point and relative expression, the tests are also judged together
(a ``suite`` row: geometric-mean change, one-sided Wilcoxon signed-rank over the per-test
log-ratios, and with several baseline runs outside their spread too), so that a change
every test shows is caught when each test has too few repeats to show it alone.

Regressions fail the gate, and so do ``insufficient`` rows when the gate is strict. A
baseline from another device, or whose total energy is defined otherwise (another total
rail, a sum of other rails, another power source: :func:`report.baselines.total_definition`), is
never used. An expression naming a metric that no result
of the gated report carries is a :class:`GateExprError` (a usage error), never a silent pass.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any, NamedTuple, cast

from pytest_edgeenergy.report.baselines import (
    BASELINE_RUNS,
    BaselineError,
    describe,
    find_baselines,
    not_comparable,
)
from pytest_edgeenergy.report.keys import op_label
from pytest_edgeenergy.report.metric_names import higher_is_better
from pytest_edgeenergy.report.model import device_label
from pytest_edgeenergy.verdict import stats as gate_stats
from pytest_edgeenergy.verdict.expr import (
    ALLOWED_FORMS,
    GateExpr,
    GateExprError,
    _as_expr,
    unit_family,
)
from pytest_edgeenergy.verdict.model import GateRow, GateVerdict, Verdict
from pytest_edgeenergy.verdict.view import (
    GateColumn,
    GateNeeds,
    GateView,
    expr_metrics,
    gate_view,
    require_carried,
)
from pytest_edgeenergy.words import counted


def _exprs_for(
    test_id: str,
    exprs: Sequence[GateExpr],
    overrides: Mapping[str, Sequence[GateExpr]],
) -> list[GateExpr]:
    own = overrides.get(test_id)
    if not own:
        return list(exprs)
    replaced = {(e.metric, e.statistic) for e in own}
    return [e for e in exprs if (e.metric, e.statistic) not in replaced] + list(own)


# A GateRow from a full tuple of its fields, without the Python-level __new__ (rows by the
# hundred thousand).
_new_row = cast("Callable[[tuple[Any, ...]], GateRow]", functools.partial(tuple.__new__, GateRow))


def _check_unit(expr: GateExpr, column: GateColumn, i: int) -> None:
    if not expr.relative and unit_family(str(column.units[i])) != expr.family:
        raise GateExprError(
            f"gate expression {expr.text!r}: unit {expr.family} does not match "
            f"{expr.metric} in {column.units[i]}\n{ALLOWED_FORMS}"
        )


def _over(expr: GateExpr, base_value: float, delta: float) -> bool:
    """The change ``delta`` from ``base_value`` is over the expression's threshold."""
    if expr.relative:
        if base_value == 0:
            return delta != 0
        return abs(delta) > expr.threshold * abs(base_value)
    return abs(delta) > expr.threshold


def _judge(
    test_id: str,
    expr: GateExpr,
    base: GateView,
    j: int,
    new: GateView,
    i: int,
    alpha: float,
    min_samples: int,
) -> GateRow:
    """Test i of ``new`` (which has the metric) against test j of ``base``."""
    metric, statistic, threshold = expr.metric, expr.statistic, expr.threshold_text
    status = new.statuses[i]
    if status != "passed":
        note = f"new result is {status}"
        return _new_row((test_id, metric, statistic, threshold, None, None, None, None, _INS, note))
    status = base.statuses[j]
    if status != "passed":
        note = f"baseline result is {status}"
        return _new_row((test_id, metric, statistic, threshold, None, None, None, None, _INS, note))
    base_column = base.metrics.get(metric)
    new_column = new.metrics[metric]
    if base_column is None or not base_column.present[j]:
        note = f"baseline has no {metric}"
        return _new_row((test_id, metric, statistic, threshold, None, None, None, None, _INS, note))
    _check_unit(expr, new_column, i)
    base_value = base_column.statistics[statistic][j]
    new_value = new_column.statistics[statistic][i]
    if base_value is None or new_value is None:
        no_value = (base_value, new_value, None, None, _INS, "no value")
        return _new_row((test_id, metric, statistic, threshold, *no_value))
    delta = new_value - base_value
    change_pct = delta / abs(base_value) * 100.0 if base_value != 0 else None
    if not _over(expr, base_value, delta):
        spread = _too_spread(expr, base_column.spreads[j], new_column.spreads[i])
        outcome = (_OK, "") if spread is None else (_INS, spread)
        within = (base_value, new_value, change_pct, None, *outcome)
        return _new_row((test_id, metric, statistic, threshold, *within))
    base_samples = base_column.samples[base_column.starts[j] : base_column.starts[j + 1]]
    new_samples = new_column.samples[new_column.starts[i] : new_column.starts[i + 1]]
    n_base, n_new = len(base_samples), len(new_samples)
    if min(n_base, n_new) < min_samples or gate_stats.min_attainable_p(n_new, n_base) >= alpha:
        note = (
            f"not enough repeats to judge ({n_base} baseline, {n_new} new; "
            f"need >= {min_samples} each and enough for p < {alpha:g})"
        )
        return GateRow(
            test_id, metric, statistic, threshold, base_value, new_value, change_pct, None, _INS,
            note,
        )  # fmt: skip
    got_worse = (delta > 0) != higher_is_better(metric)
    # One-sided test in the direction of the observed change.
    p_value = gate_stats.mann_whitney_p(new_samples, base_samples, delta > 0)
    if p_value >= alpha:
        note = f"change not significant (p={p_value:.3g})"
        spread = _too_spread(expr, base_column.spreads[j], new_column.spreads[i])
        return GateRow(
            test_id, metric, statistic, threshold, base_value, new_value, change_pct, p_value,
            _OK if spread is None else _INS, note if spread is None else f"{note}; {spread}",
        )  # fmt: skip
    verdict: Verdict = "regression" if got_worse else "improvement"
    return GateRow(
        test_id, metric, statistic, threshold, base_value, new_value, change_pct, p_value, verdict
    )


_INS: Verdict = "insufficient"
_OK: Verdict = "within"


def _spread_text(expr: GateExpr, spread: float) -> str:
    return f"{spread * 100:.2g} %" if expr.relative else f"{spread:.3g}{expr.family}"


def _too_spread(
    expr: GateExpr, base: tuple[float, float] | None, new: tuple[float, float] | None
) -> str | None:
    """The note of a row whose repeats spread more than the threshold on either side
    (``(mean, stdev)`` of each side's repeats; the stdev relative to the mean for a relative
    threshold), or None: such repeats cannot show a change of the threshold's size."""
    sides: list[tuple[str, float]] = []
    for side, known in (("baseline", base), ("new", new)):
        if known is None:
            continue
        mean, stdev = known
        if not expr.relative:
            sides.append((side, stdev))
        elif mean != 0:
            sides.append((side, stdev / abs(mean)))
        else:
            sides.append((side, math.inf if stdev > 0 else 0.0))
    if not any(spread > expr.threshold for _, spread in sides):
        return None
    words = " and ".join(f"{_spread_text(expr, x)} ({side})" for side, x in sides)
    return (
        f"the repeats spread {words}, more than the {expr.threshold_text} threshold: they "
        "cannot show a change of that size"
    )


def _baseline_views(
    reports: Sequence[Mapping[str, Any]], new_report: Mapping[str, Any], needs: GateNeeds
) -> list[GateView]:
    # A report of another device is never compared: its device is all that is read.
    fingerprint = new_report["device"]["fingerprint"]
    return [
        gate_view(r, needs)
        if r["device"]["fingerprint"] == fingerprint
        else GateView(r["device"], [], [], [], {})
        for r in reports
    ]


def evaluate(
    baseline_report: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    new_report: Mapping[str, Any],
    exprs: Iterable[str | GateExpr],
    overrides: Mapping[str, Iterable[str | GateExpr]] | None = None,
    *,
    alpha: float = 0.05,
    min_samples: int = 3,
    strict: bool = False,
    baseline_name: str = "baseline",
    new_name: str = "this run",
) -> GateVerdict:
    """Gate ``new_report`` against ``baseline_report``, or several baseline runs newest
    first (see the module docstring).

    ``overrides`` maps a test id to its own expressions; each replaces the global expression
    on the same metric and statistic, and the others still apply to that test. ``strict``:
    insufficient rows fail the gate.
    """
    parsed = [_as_expr(e) for e in exprs]
    own = {tid: [_as_expr(e) for e in es] for tid, es in (overrides or {}).items()}
    needs = expr_metrics(parsed, own)
    reports = [baseline_report] if isinstance(baseline_report, Mapping) else baseline_report
    return evaluate_views(
        _baseline_views(reports, new_report, needs),
        gate_view(new_report, needs),
        parsed,
        own,
        alpha=alpha,
        min_samples=min_samples,
        strict=strict,
        baseline_name=baseline_name,
        new_name=new_name,
    )


def evaluate_views(
    baseline: GateView | Sequence[GateView],
    new: GateView,
    exprs: Sequence[GateExpr],
    overrides: Mapping[str, Sequence[GateExpr]] | None = None,
    *,
    alpha: float = 0.05,
    min_samples: int = 3,
    strict: bool = False,
    baseline_name: str = "baseline",
    new_name: str = "this run",
) -> GateVerdict:
    """:func:`evaluate` on views holding every metric and statistic the expressions read;
    ``baseline``: one view, or the views of several baseline runs, newest first.

    Raises :class:`GateExprError` for an expression no result of ``new`` carries.
    """
    own = overrides or {}
    require_carried(new, itertools.chain(exprs, *own.values()), new_name)
    views = [baseline] if isinstance(baseline, GateView) else list(baseline)
    verdict = GateVerdict(baseline=baseline_name, new=new_name, strict=strict)
    new_device = new.device
    same = [v for v in views if v.device["fingerprint"] == new_device["fingerprint"]]
    if not same:
        base_device = views[0].device
        verdict.device_matched = False
        verdict.messages.append(
            f"no baseline for this device: {baseline_name} is from {device_label(base_device)} "
            f"({base_device['fingerprint']}), this run is on {device_label(new_device)} "
            f"({new_device['fingerprint']}); not gated"
        )
        return verdict
    same = _comparable(same, new, baseline_name, verdict.messages)
    verdict.runs = len(same)
    suites: dict[tuple[str, str], _Suite] = {}
    if len(same) == 1:
        _judge_tests(verdict.rows, suites, same[0], new, exprs, own, alpha, min_samples)
    else:
        _judge_tests_runs(verdict.rows, suites, same, new, exprs, own, alpha, min_samples)
    verdict.suite = _judge_suites(suites, alpha)
    return verdict


def _comparable(
    views: Sequence[GateView], new: GateView, baseline_name: str, messages: list[str]
) -> list[GateView]:
    """The baseline views whose total energy is defined as ``new``'s; the others are left
    out with a message, and :class:`report.baselines.BaselineError` when none is left."""
    new_total = new.total_definition
    kept: list[GateView] = []
    problems: dict[str, int] = {}
    for view in views:
        problem = not_comparable(view.total_definition, new_total)
        if problem is None:
            kept.append(view)
        else:
            problems[problem] = problems.get(problem, 0) + 1
    if not kept:
        raise BaselineError(baseline_name, f"baseline {next(iter(problems))}")
    for problem, n in problems.items():
        messages.append(f"{counted(n, 'baseline run')} of {baseline_name} left out: {problem}")
    return kept


def _no_baseline_row(test_id: str, expr: GateExpr) -> GateRow:
    return GateRow(
        test_id, expr.metric, expr.statistic, expr.threshold_text, None, None, None, None,
        "no-baseline", "no baseline result at this operating point",
    )  # fmt: skip


class _Suite:
    """The tests of one operating point x relative expression, for :func:`_judge_suites`:
    per-test log-ratios new / baseline, and per baseline run (by index) its tests' log
    deviations from their mean over the runs."""

    __slots__ = ("expr", "offsets", "op", "ratios")

    def __init__(self, op: str, expr: GateExpr) -> None:
        self.op = op
        self.expr = expr
        self.ratios: list[float] = []
        self.offsets: dict[int, list[float]] = {}


def _add_ratio(
    suites: dict[tuple[str, str], _Suite], op: str, expr: GateExpr, row: GateRow
) -> None:
    """Add a judged row's log-ratio to its suite (rows with both values > 0)."""
    base_value, new_value = row[4], row[5]
    if base_value is None or new_value is None or base_value <= 0 or new_value <= 0:
        return
    suite = suites.get((op, expr.text))
    if suite is None:
        suite = suites[(op, expr.text)] = _Suite(op, expr)
    suite.ratios.append(math.log(new_value / base_value))


def _judge_tests(
    rows: list[GateRow],
    suites: dict[tuple[str, str], _Suite],
    baseline: GateView,
    new: GateView,
    exprs: Sequence[GateExpr],
    own: Mapping[str, Sequence[GateExpr]],
    alpha: float,
    min_samples: int,
) -> None:
    """Rows against a single baseline run: repeats against repeats (:func:`_judge`)."""
    # The last of tests sharing an id and operating point is the one compared.
    baseline_tests = {key: j for j, key in enumerate(zip(baseline.ids, baseline.ops, strict=True))}
    columns = new.metrics
    for i, (test_id, op, status) in enumerate(zip(new.ids, new.ops, new.statuses, strict=True)):
        if status == "skipped":
            continue
        test_exprs = _exprs_for(test_id, exprs, own) if own else exprs
        j = baseline_tests.get((test_id, op))
        for expr in test_exprs:
            column = columns.get(expr.metric)
            if column is None or not column.present[i]:
                continue
            if j is None:
                rows.append(_no_baseline_row(test_id, expr))
                continue
            row = _judge(test_id, expr, baseline, j, new, i, alpha, min_samples)
            rows.append(row)
            if expr.relative:
                _add_ratio(suites, op, expr, row)


class _Runs(NamedTuple):
    """A test judged against several baseline runs: its row's place, and the statistic's
    log in each baseline run (by run index) and in the new run."""

    row: int
    test_id: str
    op: str
    expr: GateExpr
    runs: list[int]
    logs: list[float]
    new_value: float


def _judge_tests_runs(
    rows: list[GateRow],
    suites: dict[tuple[str, str], _Suite],
    baselines: Sequence[GateView],
    new: GateView,
    exprs: Sequence[GateExpr],
    own: Mapping[str, Sequence[GateExpr]],
    alpha: float,
    min_samples: int,
) -> None:
    """Rows against several baseline runs: a test passed with a positive value in two or
    more of them is judged against their spread (:func:`_judge_runs`), any other against
    the newest run holding it (:func:`_judge`)."""
    indexes = [
        {key: j for j, key in enumerate(zip(view.ids, view.ops, strict=True))} for view in baselines
    ]
    pending: list[_Runs] = []
    columns = new.metrics
    for i, (test_id, op, status) in enumerate(zip(new.ids, new.ops, new.statuses, strict=True)):
        if status == "skipped":
            continue
        test_exprs = _exprs_for(test_id, exprs, own) if own else exprs
        key = (test_id, op)
        holders = [(k, index[key]) for k, index in enumerate(indexes) if key in index]
        for expr in test_exprs:
            column = columns.get(expr.metric)
            if column is None or not column.present[i]:
                continue
            if not holders:
                rows.append(_no_baseline_row(test_id, expr))
                continue
            usable = _usable_runs(baselines, holders, expr) if status == "passed" else []
            new_value = column.statistics[expr.statistic][i]
            if len(usable) >= 2 and new_value is not None and new_value > 0:
                _check_unit(expr, column, i)
                runs, logs = [k for k, _, _ in usable], [math.log(v) for _, _, v in usable]
                pending.append(_Runs(len(rows), test_id, op, expr, runs, logs, new_value))
                rows.append(_no_baseline_row(test_id, expr))  # replaced below
                continue
            k, j = (usable[0][0], usable[0][1]) if usable else holders[0]
            row = _judge(test_id, expr, baselines[k], j, new, i, alpha, min_samples)
            rows.append(row)
            if expr.relative:
                _add_ratio(suites, op, expr, row)
    groups: dict[tuple[str, str, str], list[_Runs]] = {}
    for item in pending:
        groups.setdefault((item.op, item.expr.metric, item.expr.statistic), []).append(item)
    for items in groups.values():
        typical = gate_stats.typical_spread([item.logs for item in items])
        for item in items:
            rows[item.row] = _judge_runs(item, typical, alpha)
            if item.expr.relative:
                _add_runs(suites, item)


def _usable_runs(
    baselines: Sequence[GateView], holders: Sequence[tuple[int, int]], expr: GateExpr
) -> list[tuple[int, int, float]]:
    """``(run, test, value)`` of the baseline runs where the test passed with a value > 0."""
    usable = []
    for k, j in holders:
        view = baselines[k]
        column = view.metrics.get(expr.metric)
        if view.statuses[j] != "passed" or column is None or not column.present[j]:
            continue
        value = column.statistics[expr.statistic][j]
        if value is not None and value > 0:
            usable.append((k, j, value))
    return usable


def _add_runs(suites: dict[tuple[str, str], _Suite], item: _Runs) -> None:
    suite = suites.get((item.op, item.expr.text))
    if suite is None:
        suite = suites[(item.op, item.expr.text)] = _Suite(item.op, item.expr)
    center = fmean(item.logs)
    suite.ratios.append(math.log(item.new_value) - center)
    for k, log in zip(item.runs, item.logs, strict=True):
        suite.offsets.setdefault(k, []).append(log - center)


def _judge_runs(item: _Runs, typical: float, alpha: float) -> GateRow:
    """A test against several baseline runs: the baseline is the geometric mean of their
    statistic; a change over the threshold counts when it is outside their run-to-run
    spread (:func:`.stats.between_runs_p`)."""
    expr = item.expr
    head = (item.test_id, expr.metric, expr.statistic, expr.threshold_text)
    runs = len(item.logs)
    base_value = math.exp(fmean(item.logs))
    new_value = item.new_value
    delta = new_value - base_value
    change_pct = delta / base_value * 100.0
    spread = math.expm1(gate_stats.run_spread(item.logs, typical))
    about = f"{runs} baseline runs, run-to-run spread {spread * 100.0:.2g} %"
    # Runs that scatter more than the threshold cannot show a change of its size.
    wide = spread > expr.threshold if expr.relative else base_value * spread > expr.threshold
    unjudged: Verdict = _INS if wide else _OK
    beyond = (
        f"; the runs spread more than the {expr.threshold_text} threshold: they cannot show "
        "a change of that size"
        if wide
        else ""
    )
    if not _over(expr, base_value, delta):
        return GateRow(*head, base_value, new_value, change_pct, None, unjudged, about + beyond)
    greater = delta > 0
    p_value = gate_stats.between_runs_p(math.log(new_value), item.logs, typical, greater)
    if not p_value < alpha:
        note = f"change within the noise of {about} (p={p_value:.3g}){beyond}"
        return GateRow(*head, base_value, new_value, change_pct, p_value, unjudged, note)
    got_worse = greater != higher_is_better(expr.metric)
    verdict: Verdict = "regression" if got_worse else "improvement"
    return GateRow(*head, base_value, new_value, change_pct, p_value, verdict, about)


def _judge_suites(suites: Mapping[tuple[str, str], _Suite], alpha: float) -> list[GateRow]:
    """A row per suite of at least :func:`.stats.min_suite_tests` tests: the
    geometric-mean change over the threshold and a one-sided Wilcoxon signed-rank test of
    the per-test log-ratios; with several baseline runs, the mean log change must also be
    outside the spread of the runs' own offsets."""
    fewest = gate_stats.min_suite_tests(alpha)
    rows: list[GateRow] = []
    for suite in suites.values():
        n = len(suite.ratios)
        if n < fewest:
            continue
        expr = suite.expr
        mean_log = fmean(suite.ratios)
        change_pct = math.expm1(mean_log) * 100.0
        head = (
            f"suite: {counted(n, 'test')} at {op_label(suite.op)}",
            expr.metric, expr.statistic, expr.threshold_text, None, None, change_pct,
        )  # fmt: skip
        about = f"geometric mean of {counted(n, 'per-test change')}"
        if not abs(change_pct) > expr.threshold * 100.0:
            rows.append(GateRow(*head, None, _OK, about))
            continue
        greater = mean_log > 0
        p_value = gate_stats.suite_p(suite.ratios, greater)
        offsets = [fmean(values) for values in suite.offsets.values()]
        if len(offsets) >= 2:
            p_between = gate_stats.suite_between_runs_p(mean_log, offsets, greater)
            p_value = max(p_value, p_between)
            about += f", against the spread of {len(offsets)} baseline runs"
        if not p_value < alpha:
            rows.append(GateRow(*head, p_value, _OK, f"{about}: not significant"))
            continue
        got_worse = greater != higher_is_better(expr.metric)
        rows.append(GateRow(*head, p_value, "regression" if got_worse else "improvement", about))
    return rows


def gate_against(
    baseline: Path,
    new_report: Mapping[str, Any],
    exprs: Iterable[str | GateExpr],
    overrides: Mapping[str, Iterable[str | GateExpr]] | None = None,
    *,
    strict: bool = False,
    runs: int = BASELINE_RUNS,
    new_name: str = "this run",
) -> GateVerdict:
    """Find the baseline runs (file or directory, see :func:`report.baselines.find_baselines`)
    and evaluate. An expression no result of ``new_report`` carries raises
    :class:`GateExprError` even when there is no baseline yet."""
    parsed = [_as_expr(e) for e in exprs]
    own = {tid: [_as_expr(e) for e in es] for tid, es in (overrides or {}).items()}
    needs = expr_metrics(parsed, own)
    new_view = gate_view(new_report, needs)
    require_carried(new_view, itertools.chain(parsed, *own.values()), new_name)
    found, messages = find_baselines(baseline, new_report, runs=runs)
    if not found:
        verdict = GateVerdict(baseline=str(baseline), new=new_name, device_matched=False)
        verdict.messages.extend(messages)
        return verdict
    verdict = evaluate_views(
        _baseline_views([report for _, report in found], new_report, needs),
        new_view,
        parsed,
        own,
        strict=strict,
        baseline_name=describe(baseline, found),
        new_name=new_name,
    )
    verdict.messages[:0] = messages
    return verdict
