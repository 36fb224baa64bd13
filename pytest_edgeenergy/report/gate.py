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
  except for metrics in :data:`~.model.HIGHER_IS_BETTER`;
* ``no-baseline``: the baseline has no such test at that operating point.

With several baseline runs (a directory of earlier reports of the device), a test found
passed in two or more of them is judged against their run-to-run spread instead (see
:func:`.gate_stats.between_runs_p`): repeats inside one run understate the noise between
runs. For each operating point and relative expression, the tests are also judged together
(a ``suite`` row: geometric-mean change, one-sided Wilcoxon signed-rank over the per-test
log-ratios, and with several baseline runs outside their spread too), so that a change
every test shows is caught when each test has too few repeats to show it alone.

Regressions fail the gate, and so do ``insufficient`` rows when the gate is strict. A
baseline from another device, or whose total energy is defined otherwise (another total
rail, a sum of other rails, another power source: :func:`.baselines.total_definition`), is
never used. An expression naming a metric that no result
of the gated report carries is a :class:`GateExprError` (a usage error), never a silent pass.
"""

from __future__ import annotations

import functools
import html
import itertools
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import fmean
from typing import Any, Literal, NamedTuple, cast

from pytest_edgeenergy.report import gate_stats
from pytest_edgeenergy.report.baselines import (
    BASELINE_RUNS,
    BaselineError,
    TotalDefinition,
    describe,
    find_baselines,
    not_comparable,
    total_definition,
)
from pytest_edgeenergy.report.keys import op_key, op_label
from pytest_edgeenergy.report.metric_names import carried_hint, did_you_mean, higher_is_better
from pytest_edgeenergy.report.model import METRIC_UNITS, device_label
from pytest_edgeenergy.report.tables import (
    Change,
    Format,
    Table,
    fold_columns,
    render,
    render_html_table,
)
from pytest_edgeenergy.words import counted

from ..errors import EdgeEnergyError

STATISTICS = ("mean", "median", "min", "max")

ALLOWED_FORMS = """\
allowed gate expressions are METRIC:STATISTIC:THRESHOLD, for example
  energy_per_item:mean:5%     relative: fail when the mean rises more than 5 %
  energy_j:median:0.02J       absolute, energy: J, mJ, uJ, kJ
  latency_p90:mean:10ms       absolute, time: s, ms, us
  power_mean:mean:0.5W        absolute, power: W, mW
  memory_peak:max:50MB        absolute, memory: B, kB, MB, GB, KiB, MiB, GiB
  throughput:mean:2items/s    absolute, rate: items/s
  edp:mean:0.01J*s            absolute, energy-delay: J*s, mJ*s
STATISTIC is one of mean, median, min, max; an absolute unit must match the metric's unit
(J/item metrics take energy units, per item)"""

_UNIT_SCALES: dict[str, dict[str, float]] = {
    "J": {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "µJ": 1e-6, "kJ": 1e3},
    "s": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6},
    "W": {"W": 1.0, "mW": 1e-3, "kW": 1e3},
    "B": {"B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}
    | {"KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3},
    "items/s": {"items/s": 1.0, "item/s": 1.0},
    "J·s": {"J·s": 1.0, "J*s": 1.0, "Js": 1.0, "mJ·s": 1e-3, "mJ*s": 1e-3},
}
_SUFFIX_FAMILY = {suffix: family for family, s in _UNIT_SCALES.items() for suffix in s}
_THRESHOLD = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*(%|\S+)$")

Verdict = Literal["regression", "improvement", "within", "insufficient", "no-baseline"]


class GateExprError(EdgeEnergyError, ValueError):
    """A gate expression is unusable (a usage error): it cannot be parsed (the message lists
    the allowed forms), or it names a metric that no result of the gated report carries (the
    message lists the metrics present)."""


def unit_family(unit: str) -> str:
    """The unit a threshold must be given in: ``J/item`` -> ``J``, ``J*s`` -> ``J·s``."""
    if unit.endswith("/item"):
        unit = unit[: -len("/item")]
    return _SUFFIX_FAMILY.get(unit, unit)


@dataclass(frozen=True)
class GateExpr:
    """A parsed ``metric:statistic:threshold``; absolute thresholds in the family's base
    unit (J, s, W, B, items/s, J·s), relative ones as a fraction (5 % -> 0.05)."""

    metric: str
    statistic: str
    threshold: float
    relative: bool
    family: str | None
    text: str

    @cached_property
    def threshold_text(self) -> str:
        """The threshold for display: ``5%`` or ``0.01s``."""
        if self.relative:
            return f"{self.threshold * 100:g}%"
        return f"{self.threshold:g}{self.family}"


def parse_expr(text: str) -> GateExpr:
    """Parse ``metric:statistic:threshold``; :class:`GateExprError` lists the allowed forms."""

    def bad(why: str) -> GateExprError:
        return GateExprError(f"gate expression {text!r}: {why}\n{ALLOWED_FORMS}")

    parts = [p.strip() for p in text.strip().split(":")]
    if len(parts) != 3 or not all(parts):
        raise bad("expected three parts separated by ':'")
    metric, statistic, threshold = parts
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", metric):
        raise bad(f"metric {metric!r} is not a metric name")
    if statistic not in STATISTICS:
        hint = did_you_mean(statistic, STATISTICS)
        raise bad(f"statistic {statistic!r} is not one of {', '.join(STATISTICS)}{hint}")
    match = _THRESHOLD.match(threshold)
    if not match:
        raise bad(f"threshold {threshold!r} is not a number followed by % or a unit")
    suffix = match.group(2)
    number = float(threshold[: len(threshold) - len(suffix)].strip())
    if suffix == "%":
        return GateExpr(metric, statistic, number / 100.0, True, None, text.strip())
    family = _SUFFIX_FAMILY.get(suffix)
    if family is None:
        raise bad(f"unit {suffix!r} is not a known unit")
    if metric in METRIC_UNITS and unit_family(METRIC_UNITS[metric]) != family:
        raise bad(f"unit {suffix!r} measures {family} but {metric} is in {METRIC_UNITS[metric]}")
    scale = _UNIT_SCALES[family][suffix]
    return GateExpr(metric, statistic, number * scale, False, family, text.strip())


def _as_expr(expr: str | GateExpr) -> GateExpr:
    return expr if isinstance(expr, GateExpr) else parse_expr(expr)


class GateRow(NamedTuple):
    """One test x expression outcome (``change_pct`` is (new - baseline) / |baseline|)."""

    test_id: str
    metric: str
    statistic: str
    threshold: str
    baseline: float | None
    new: float | None
    change_pct: float | None
    p_value: float | None
    verdict: Verdict
    note: str = ""


@dataclass
class GateVerdict:
    """The outcome of one gate: a row per test x expression, a row per suite (operating
    point x relative expression, see the module docstring), and messages for the reader.

    ``strict``: ``insufficient`` rows fail the gate too. ``runs``: baseline runs read.
    """

    rows: list[GateRow] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    baseline: str = ""
    new: str = "this run"
    device_matched: bool = True
    suite: list[GateRow] = field(default_factory=list)
    strict: bool = False
    runs: int = 1
    suite_note: str = (
        "suite: the tests of one operating point judged together (geometric-mean change, "
        "one-sided Wilcoxon signed-rank over the per-test log-ratios)"
    )
    """How the suite rows were judged (a paired verdict says its own method)."""

    @property
    def regressions(self) -> int:
        """Regression rows, per test and per suite."""
        return self.count("regression") + self.suite_count("regression")

    @property
    def failed(self) -> bool:
        return self.regressions > 0 or (self.strict and self.count("insufficient") > 0)

    @property
    def matched(self) -> int:
        """Rows that found a baseline test."""
        return sum(1 for r in self.rows if r.verdict != "no-baseline")

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.rows if r.verdict == verdict)

    def suite_count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.suite if r.verdict == verdict)

    def failure_reason(self) -> str:
        """Why the gate failed, e.g. ``2 significant regressions``; empty when it passed."""
        reasons = []
        if self.regressions:
            reasons.append(f"{counted(self.regressions, 'significant regression')}")
        if self.strict and self.count("insufficient"):
            reasons.append(f"{self.count('insufficient')} insufficient, strict gate")
        return "; ".join(reasons)


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


@dataclass(frozen=True)
class GateColumn:
    """One gated metric across a report's tests (position i: the report's test i).

    ``present[i]``: test i has the metric (always False for skipped tests, never judged);
    ``statistics[s][i]``: ``stats[s]``, or ``value`` for a metric without stats; the
    samples of test i are ``samples[starts[i]:starts[i + 1]]``; ``spreads[i]``: the
    repeats' ``(mean, stdev)`` from the stats (None without stats or with one repeat).
    """

    present: list[bool]
    units: list[str | None]
    statistics: dict[str, list[float | None]]
    starts: list[int]
    samples: list[float]
    spreads: list[tuple[float, float] | None] = field(default_factory=list)


@dataclass(frozen=True)
class GateView:
    """What the gate reads of one report: its device and, per test in order, id, requested
    operating point (:func:`.keys.op_key`), status and the gated metrics (by column).

    Kept in plain lists, it is small and quick to pickle next to the report, so reports can
    be read in worker processes and only their views sent back (see :func:`gate_view`).
    """

    device: Mapping[str, Any]
    ids: list[str]
    ops: list[str]
    statuses: list[str]
    metrics: dict[str, GateColumn]
    names: tuple[str, ...] = ()
    """Every metric name the report's (not skipped) results carry, sorted; filled only when
    some gated metric is carried by none of them (for :func:`require_carried`'s message)."""
    total: TotalDefinition | None = None
    """How the report's total energy is defined (None: from ``device`` alone)."""

    @property
    def total_definition(self) -> TotalDefinition:
        return self.total or total_definition({"device": self.device})


GateNeeds = Mapping[str, Collection[str]]
"""Metric name -> the statistics a gate reads of it."""


def expr_metrics(
    exprs: Iterable[GateExpr], overrides: Mapping[str, Iterable[GateExpr]] | None = None
) -> dict[str, frozenset[str]]:
    """The metrics a gate with ``exprs`` (and ``overrides``) reads, with their statistics."""
    needs: dict[str, set[str]] = {}
    for expr in itertools.chain(exprs, *(overrides or {}).values()):
        needs.setdefault(expr.metric, set()).add(expr.statistic)
    return {name: frozenset(statistics) for name, statistics in needs.items()}


def gate_view(report: Mapping[str, Any], needs: GateNeeds) -> GateView:
    """The part of ``report`` that a gate reading ``needs`` (see :func:`expr_metrics`) reads."""
    # Repeated strings become one object each, which pickling then writes once.
    strings: dict[Any, Any] = {}
    share = strings.setdefault
    ids: list[str] = []
    ops: list[str] = []
    statuses: list[str] = []
    columns = {
        name: GateColumn([], [], {s: [] for s in statistics}, [0], [], [])
        for name, statistics in needs.items()
    }
    plan = [
        (
            name,
            column.present.append,
            column.units.append,
            list(column.statistics.items()),
            column.starts.append,
            column.samples,
            column.spreads.append,
        )
        for name, column in columns.items()
    ]
    for test in report["tests"]:
        status = test["status"]
        status = share(status, status)
        ids.append(test["id"])
        ops.append(op_key(test["params"]))
        statuses.append(status)
        own = test["metrics"] if status != "skipped" else {}
        for name, present, units, statistics, starts, samples, spreads in plan:
            metric = own.get(name)
            if metric is None:
                present(False)
                units(None)
                spreads(None)
                for _, values in statistics:
                    values.append(None)
            else:
                present(True)
                unit = metric.get("unit")
                units(share(unit, unit))
                stats = metric.get("stats")
                if stats:
                    for s, values in statistics:
                        value = stats.get(s)
                        values.append(float(value) if value is not None else None)
                    mean, stdev = stats.get("mean"), stats.get("stdev")
                    known = mean is not None and stdev is not None
                    spreads((float(mean), float(stdev)) if known else None)
                else:
                    value = metric.get("value")
                    number = float(value) if value is not None else None
                    for _, values in statistics:
                        values.append(number)
                    spreads(None)
                samples += metric.get("samples") or ()
            starts(len(samples))
    names: tuple[str, ...] = ()
    if any(True not in column.present for column in columns.values()):
        names = tuple(
            sorted({n for t in report["tests"] if t["status"] != "skipped" for n in t["metrics"]})
        )
    total = total_definition(report)
    return GateView(report["device"], ids, ops, statuses, columns, names, total)


def require_carried(view: GateView, exprs: Iterable[GateExpr], name: str = "this run") -> None:
    """Raise :class:`GateExprError` for an expression whose metric no result of ``view``
    carries, naming the metrics present (a gate that would silently compare nothing). A
    report whose results carry no metric at all (all skipped or failed) passes: nothing
    was measured, and the gate says so."""
    for expr in exprs:
        column = view.metrics.get(expr.metric)
        if column is None or True in column.present or not view.names:
            continue
        raise GateExprError(
            f"gate expression {expr.text!r}: no result of {name} carries the metric "
            f"{expr.metric!r}{carried_hint(expr.metric, view.names)}; metrics present: "
            f"{', '.join(view.names)}"
        )


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
    out with a message, and :class:`.baselines.BaselineError` when none is left."""
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
    spread (:func:`.gate_stats.between_runs_p`)."""
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
    """A row per suite of at least :func:`.gate_stats.min_suite_tests` tests: the
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
    """Find the baseline runs (file or directory, see :func:`.baselines.find_baselines`)
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


# ---------------------------------------------------------------------------------------
# rendering

_VERDICT_COLUMNS = [
    "test",
    "metric",
    "threshold",
    "baseline",
    "new",
    "change %",
    "p-value",
    "verdict",
    "note",
]


_COUNTED: tuple[tuple[Verdict, str, str], ...] = (
    ("regression", "regression", "regressions"),
    ("improvement", "improvement", "improvements"),
    ("within", "within", "within"),
    ("insufficient", "insufficient", "insufficient"),
    ("no-baseline", "without baseline", "without baseline"),
)


def _counts(count: Callable[[Verdict], int], verdicts: Collection[Verdict] = ()) -> str:
    """``2 regressions, 6 within``: the rows of each verdict (of ``verdicts`` when given)."""
    return ", ".join(
        counted(n, noun, many)
        for v, noun, many in _COUNTED
        if (not verdicts or v in verdicts) and (n := count(v))
    )


def _all_counts(verdict: GateVerdict, verdicts: Collection[Verdict] = ()) -> str:
    """The test rows' counts, then the suite rows' (``8 within; suite-level: 1 within``)."""
    tests = _counts(verdict.count, verdicts)
    suite = _counts(verdict.suite_count, verdicts)
    return "; ".join(part for part in (tests, suite and f"suite-level: {suite}") if part)


STRICT_OPTION = "--fail-insufficient"
"""The option that makes the gate strict, as ``edgeenergy`` names it (pytest:
``--edge-fail-insufficient``)."""

_DECIDED: tuple[Verdict, ...] = ("regression", "improvement", "within")

_WHY_INSUFFICIENT = (
    "too few repeats or rounds to tell the change from the threshold, repeats spread wider "
    "than the threshold, or a failed or invalid result: each row's note says which"
)


def _why_undecided(verdict: GateVerdict) -> str:
    """Why the insufficient rows could not be decided: their note when they share one,
    else what makes a row insufficient."""
    notes = {r.note for r in itertools.chain(verdict.rows, verdict.suite) if r.verdict == _INS}
    if len(notes) == 1 and "" not in notes:
        return notes.pop()
    return _WHY_INSUFFICIENT


def _decided(verdict: GateVerdict) -> tuple[int, int]:
    """Rows (tests and suites) decided, and rows that could not be (``insufficient``)."""
    decided = sum(verdict.count(v) + verdict.suite_count(v) for v in _DECIDED)
    return decided, verdict.count(_INS) + verdict.suite_count(_INS)


def _none_of(rows: int) -> str:
    return "the one row could not" if rows == 1 else f"none of {rows} rows could"


def headline(verdict: GateVerdict, strict_option: str = STRICT_OPTION) -> str:
    """The verdict's summary line, claiming no more than was decided: ``gate FAILED: 2
    regressions, 6 within``, ``gate passed: 8 within``; with rows that could not be decided
    (``insufficient``) and no failure, ``gate passed on 3 of 5 rows (...)`` or, when none
    was decided, ``gate NOT DECIDED: ...``, each saying how many, why, and that
    ``strict_option`` would fail the gate (when a test's row is among them: a suite's does
    not fail a strict gate). Every gate's front end says this line."""
    if verdict.failed:
        line = f"gate FAILED: {_all_counts(verdict)}"
        if verdict.strict and verdict.count(_INS):
            line += f" (strict: insufficient fails); not decided: {_why_undecided(verdict)}"
        return line
    decided, undecided = _decided(verdict)
    if not undecided:
        return f"gate passed: {_all_counts(verdict) or 'nothing compared'}"
    why = f"(insufficient: {_why_undecided(verdict)})"
    without = verdict.count("no-baseline")
    without_text = f", {without} without baseline" if without else ""
    # A strict gate fails on tests' insufficient rows, not on a suite's.
    strict = f"; {strict_option} would fail the gate" if verdict.count(_INS) else ""
    if decided:
        counts = _all_counts(verdict, _DECIDED)
        return (
            f"gate passed on {decided} of {decided + undecided} rows ({counts}){without_text}; "
            f"{undecided} could not be decided {why}{strict}"
        )
    return f"gate NOT DECIDED: {_none_of(undecided)} be decided {why}{without_text}{strict}"


def gate_outcome(verdict: GateVerdict, strict_option: str = STRICT_OPTION) -> str:
    """The outcome in a few words, for a front end's last line: ``passed``, ``FAILED (2
    significant regressions)``, ``NOT DECIDED (...)`` or ``passed on 3 of 5 rows (...)``
    (the :func:`headline` says the rest)."""
    if verdict.failed:
        return f"FAILED ({verdict.failure_reason()})"
    decided, undecided = _decided(verdict)
    if not undecided:
        return "passed"
    why = f"{undecided} could not be decided"
    if verdict.count(_INS):
        why += f"; {strict_option} would fail it"
    if decided:
        return f"passed on {decided} of {decided + undecided} rows ({why})"
    return f"NOT DECIDED ({why})"


def _table_row(r: GateRow) -> list[Any]:
    return [
        r.test_id,
        f"{r.metric}:{r.statistic}",
        r.threshold,
        r.baseline,
        r.new,
        Change(r.change_pct) if r.change_pct is not None else None,
        r.p_value,
        r.verdict.upper() if r.verdict == "regression" else r.verdict,
        r.note,
    ]


WITHIN_SHOWN = 20
"""``within`` rows a verdict table shows (those that changed most), beside every other row."""


def _shown_rows(rows: Sequence[GateRow], all_rows: bool) -> tuple[list[GateRow], list[GateRow]]:
    """The rows a verdict table shows, in order, and the ``within`` rows it leaves out:
    every row that is not ``within``, and the :data:`WITHIN_SHOWN` within rows that changed
    most (every row with ``all_rows``)."""
    within = [r for r in rows if r.verdict == "within"]
    if all_rows or len(within) <= WITHIN_SHOWN:
        return list(rows), []
    ranked = sorted(within, key=lambda r: -abs(r.change_pct or 0.0))
    kept = {id(r) for r in ranked[:WITHIN_SHOWN]}
    shown = [r for r in rows if r.verdict != "within" or id(r) in kept]
    return shown, [r for r in within if id(r) not in kept]


def _left_out(rows: Sequence[GateRow]) -> str:
    changes = [r.change_pct for r in rows if r.change_pct is not None]
    span = f" (change {min(changes):+.2f} % .. {max(changes):+.2f} %)" if changes else ""
    return f"{counted(len(rows), 'more row')} within the threshold not shown{span}"


def verdict_table(
    verdict: GateVerdict, *, all_rows: bool = False, strict_option: str = STRICT_OPTION
) -> Table:
    """The verdict as a table: every judged row with its baseline, new value and change,
    ``within`` rows too (the :data:`WITHIN_SHOWN` that changed most unless ``all_rows``).
    The last note is the :func:`headline` (``gate passed: 8 within``).

    With ``all_rows`` (CSV) the table has every column; otherwise the metric and threshold
    that every row shares are said once above the table, and a column empty on every row
    (p-value, note) is left out."""
    table = Table(
        list(_VERDICT_COLUMNS), title=f"Energy gate: {verdict.new} against {verdict.baseline}"
    )
    tests, hidden = _shown_rows(verdict.rows, all_rows)
    suites, hidden_suites = _shown_rows(verdict.suite, all_rows)
    table.rows.extend(_table_row(r) for r in tests + suites)
    notes = table.notes
    notes.extend(verdict.messages)
    if hidden or hidden_suites:
        notes.append(_left_out(hidden + hidden_suites))
    if verdict.runs > 1:
        notes.append(
            f"baseline: geometric mean over the {verdict.runs} baseline runs holding a test; "
            "a change must be outside their run-to-run spread"
        )
    if verdict.suite:
        notes.append(verdict.suite_note)
    notes.append(headline(verdict, strict_option))
    if all_rows:
        return table
    return fold_columns(table, ["metric", "threshold"], empty=["p-value", "note"])


def _notes_only(table: Table, fmt: Format) -> str:
    """A table without rows: its title and notes, no empty header."""
    if fmt == "markdown":
        return f"### {table.title}\n\n" + "".join(f"- {n}\n" for n in table.notes)
    if fmt == "html":
        items = "".join(f"<li>{html.escape(n)}</li>" for n in table.notes)
        return f"<h2>{html.escape(table.title)}</h2>\n<ul>{items}</ul>\n"
    return "\n".join([table.title, *table.notes]) + "\n"


def render_verdict(
    verdict: GateVerdict,
    fmt: Format = "table",
    *,
    all_rows: bool = False,
    strict_option: str = STRICT_OPTION,
) -> str:
    """Render a verdict as ``table``, ``markdown``, ``csv`` or ``html`` (fragment); with no
    row to show, text formats give the title and notes only. ``strict_option``: the option
    that makes this front end's gate strict, named by the :func:`headline`."""
    table = verdict_table(verdict, all_rows=all_rows or fmt == "csv", strict_option=strict_option)
    if not table.rows and fmt != "csv":
        return _notes_only(table, fmt)
    if fmt == "html":
        return render_html_table(table)
    return render(table, fmt)
