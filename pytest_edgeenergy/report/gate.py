"""The regression gate: a change counts only when it is over a threshold AND significant.

An expression ``metric:statistic:threshold`` (see :data:`ALLOWED_FORMS`) names what to
watch. For each test of the new report the baseline test with the same id and operating
point, on the same device (fingerprint), is compared:

* ``within``: the change of the statistic is not over the threshold, or it is but the
  repeats do not show it is real (one-sided Mann-Whitney U, p >= alpha);
* ``insufficient``: over the threshold but too few repeats to judge (fewer than
  ``min_samples`` per side, or so few that no outcome could reach p < alpha: 3 vs 3 repeats
  cannot go below p = 0.05), or an invalid/failed result on either side;
* ``regression`` / ``improvement``: over the threshold and significant; "worse" means higher
  except for metrics in :data:`~.model.HIGHER_IS_BETTER`;
* ``no-baseline``: the baseline has no such test at that operating point.

Only regressions fail the gate. A baseline from another device is never used.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, cast

from pytest_edgeenergy.report.keys import op_key
from pytest_edgeenergy.report.load import ReportError, load_report, require_tests
from pytest_edgeenergy.report.model import (
    HIGHER_IS_BETTER,
    METRIC_UNITS,
    device_label,
    device_slug,
    parse_timestamp,
)
from pytest_edgeenergy.report.tables import Format, Table, render, render_html_table
from pytest_edgeenergy.report.writer import atomic_write_text

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


class GateExprError(ValueError):
    """A gate expression cannot be parsed; the message lists the allowed forms."""


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
        raise bad(f"statistic {statistic!r} is not one of {', '.join(STATISTICS)}")
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
    """The outcome of one gate: a row per test x expression, and messages for the reader."""

    rows: list[GateRow] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    baseline: str = ""
    new: str = "this run"
    device_matched: bool = True

    @property
    def failed(self) -> bool:
        return any(r.verdict == "regression" for r in self.rows)

    @property
    def matched(self) -> int:
        """Rows that found a baseline test."""
        return sum(1 for r in self.rows if r.verdict != "no-baseline")

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.rows if r.verdict == verdict)


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


def _statistic(metric: Mapping[str, Any], statistic: str) -> float | None:
    stats = metric.get("stats")
    if stats:
        value = stats.get(statistic)
        return float(value) if value is not None else None
    value = metric.get("value")
    return float(value) if value is not None else None


def _min_attainable_p(n1: int, n2: int) -> float:
    return 1.0 / math.comb(n1 + n2, n1)


def _mann_whitney_p(new: Sequence[float], base: Sequence[float], worse_is_higher: bool) -> float:
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    alternative = "greater" if worse_is_higher else "less"
    result = mannwhitneyu(list(new), list(base), alternative=alternative)
    return float(result.pvalue)


@dataclass(frozen=True)
class GateColumn:
    """One gated metric across a report's tests (position i: the report's test i).

    ``present[i]``: test i has the metric (always False for skipped tests, never judged);
    ``statistics[s][i]``: statistic ``s`` as :func:`_statistic` reads it; the samples of
    test i are ``samples[starts[i]:starts[i + 1]]``.
    """

    present: list[bool]
    units: list[str | None]
    statistics: dict[str, list[float | None]]
    starts: list[int]
    samples: list[float]


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
        name: GateColumn([], [], {s: [] for s in statistics}, [0], [])
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
        for name, present, units, statistics, starts, samples in plan:
            metric = own.get(name)
            if metric is None:
                present(False)
                units(None)
                for _, values in statistics:
                    values.append(None)
            else:
                present(True)
                unit = metric.get("unit")
                units(share(unit, unit))
                stats = metric.get("stats")
                if stats:  # as _statistic(metric, s) for each s
                    for s, values in statistics:
                        value = stats.get(s)
                        values.append(float(value) if value is not None else None)
                else:
                    value = metric.get("value")
                    number = float(value) if value is not None else None
                    for _, values in statistics:
                        values.append(number)
                samples += metric.get("samples") or ()
            starts(len(samples))
    return GateView(report["device"], ids, ops, statuses, columns)


# A GateRow from a full tuple of its fields, without the Python-level __new__ (rows by the
# hundred thousand).
_new_row = cast("Callable[[tuple[Any, ...]], GateRow]", functools.partial(tuple.__new__, GateRow))


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
    if not expr.relative and unit_family(str(new_column.units[i])) != expr.family:
        raise GateExprError(
            f"gate expression {expr.text!r}: unit {expr.family} does not match "
            f"{metric} in {new_column.units[i]}\n{ALLOWED_FORMS}"
        )
    base_value = base_column.statistics[statistic][j]
    new_value = new_column.statistics[statistic][i]
    if base_value is None or new_value is None:
        no_value = (base_value, new_value, None, None, _INS, "no value")
        return _new_row((test_id, metric, statistic, threshold, *no_value))
    delta = new_value - base_value
    change_pct = delta / abs(base_value) * 100.0 if base_value != 0 else None
    if expr.relative:
        over = base_value != 0 and abs(delta) > expr.threshold * abs(base_value)
        over = over or (base_value == 0 and delta != 0)
    else:
        over = abs(delta) > expr.threshold
    if not over:
        within = (base_value, new_value, change_pct, None, _OK, "")
        return _new_row((test_id, metric, statistic, threshold, *within))
    base_samples = base_column.samples[base_column.starts[j] : base_column.starts[j + 1]]
    new_samples = new_column.samples[new_column.starts[i] : new_column.starts[i + 1]]
    n_base, n_new = len(base_samples), len(new_samples)
    if min(n_base, n_new) < min_samples or _min_attainable_p(n_new, n_base) >= alpha:
        note = (
            f"not enough repeats to judge ({n_base} baseline, {n_new} new; "
            f"need >= {min_samples} each and enough for p < {alpha:g})"
        )
        return GateRow(
            test_id, metric, statistic, threshold, base_value, new_value, change_pct, None, _INS,
            note,
        )  # fmt: skip
    worse_is_higher = metric not in HIGHER_IS_BETTER
    got_worse = (delta > 0) == worse_is_higher
    # One-sided test in the direction of the observed change.
    p_value = _mann_whitney_p(new_samples, base_samples, worse_is_higher == got_worse)
    if p_value >= alpha:
        note = f"change not significant (p={p_value:.3g})"
        return GateRow(
            test_id, metric, statistic, threshold, base_value, new_value, change_pct, p_value,
            "within", note,
        )  # fmt: skip
    verdict: Verdict = "regression" if got_worse else "improvement"
    return GateRow(
        test_id, metric, statistic, threshold, base_value, new_value, change_pct, p_value, verdict
    )


_INS: Verdict = "insufficient"
_OK: Verdict = "within"


def evaluate(
    baseline_report: Mapping[str, Any],
    new_report: Mapping[str, Any],
    exprs: Iterable[str | GateExpr],
    overrides: Mapping[str, Iterable[str | GateExpr]] | None = None,
    *,
    alpha: float = 0.05,
    min_samples: int = 3,
    baseline_name: str = "baseline",
    new_name: str = "this run",
) -> GateVerdict:
    """Gate ``new_report`` against ``baseline_report`` (see the module docstring).

    ``overrides`` maps a test id to its own expressions; each replaces the global expression
    on the same metric and statistic, and the others still apply to that test.
    """
    parsed = [_as_expr(e) for e in exprs]
    own = {tid: [_as_expr(e) for e in es] for tid, es in (overrides or {}).items()}
    needs = expr_metrics(parsed, own)
    if baseline_report["device"]["fingerprint"] != new_report["device"]["fingerprint"]:
        # Views are not needed to say so; the device is all that is read.
        base_view = GateView(baseline_report["device"], [], [], [], {})
        new_view = GateView(new_report["device"], [], [], [], {})
    else:
        base_view, new_view = gate_view(baseline_report, needs), gate_view(new_report, needs)
    return evaluate_views(
        base_view,
        new_view,
        parsed,
        own,
        alpha=alpha,
        min_samples=min_samples,
        baseline_name=baseline_name,
        new_name=new_name,
    )


def evaluate_views(
    baseline: GateView,
    new: GateView,
    exprs: Sequence[GateExpr],
    overrides: Mapping[str, Sequence[GateExpr]] | None = None,
    *,
    alpha: float = 0.05,
    min_samples: int = 3,
    baseline_name: str = "baseline",
    new_name: str = "this run",
) -> GateVerdict:
    """:func:`evaluate` on views holding every metric and statistic the expressions read."""
    own = overrides or {}
    verdict = GateVerdict(baseline=baseline_name, new=new_name)
    base_device, new_device = baseline.device, new.device
    if base_device["fingerprint"] != new_device["fingerprint"]:
        verdict.device_matched = False
        verdict.messages.append(
            f"no baseline for this device: {baseline_name} is from {device_label(base_device)} "
            f"({base_device['fingerprint']}), this run is on {device_label(new_device)} "
            f"({new_device['fingerprint']}); not gated"
        )
        return verdict
    # The last of tests sharing an id and operating point is the one compared.
    baseline_tests = {key: j for j, key in enumerate(zip(baseline.ids, baseline.ops, strict=True))}
    rows = verdict.rows
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
                rows.append(
                    GateRow(
                        test_id,
                        expr.metric,
                        expr.statistic,
                        expr.threshold_text,
                        None,
                        None,
                        None,
                        None,
                        "no-baseline",
                        "no baseline result at this operating point",
                    )
                )
                continue
            rows.append(_judge(test_id, expr, baseline, j, new, i, alpha, min_samples))
    return verdict


# ---------------------------------------------------------------------------------------
# baselines on disk


def _started(report: Mapping[str, Any]) -> float:
    try:
        return parse_timestamp(report["started_at"]).timestamp()
    except ValueError:
        return 0.0


def find_baseline(
    baseline: Path,
    new_report: Mapping[str, Any],
    *,
    load: Callable[[Path], dict[str, Any]] = load_report,
) -> tuple[Path | None, dict[str, Any] | None, list[str]]:
    """The baseline report for ``new_report``'s device: ``baseline`` itself when it is a
    file, else the newest report in that directory with the same device fingerprint.

    Returns ``(path, report, messages)``; path and report are None when there is no baseline
    for this device (not an error). A baseline *file* that is not a valid report raises
    :class:`ReportError`; unreadable files in a directory are skipped with a message.
    ``load`` reads a report (:func:`~.load.load_report`; a caching one when called often).
    ``new_report`` needs only its header (``device``, ``run_id``).
    """
    messages: list[str] = []
    fingerprint = new_report["device"]["fingerprint"]
    label = device_label(new_report["device"])
    if not baseline.exists():
        raise ReportError(baseline, "baseline file or directory does not exist")
    if baseline.is_file():
        report = load(baseline)
        require_tests(report, baseline)
        if report["device"]["fingerprint"] != fingerprint:
            messages.append(
                f"no baseline for this device: {baseline} is from "
                f"{device_label(report['device'])}, this run is on {label}; not gated"
            )
            return None, None, messages
        return baseline, report, messages
    best: tuple[float, Path, dict[str, Any]] | None = None
    for path in sorted(baseline.glob("*.json")):
        try:
            report = load(path)
        except ReportError as exc:
            messages.append(f"skipped baseline candidate {exc}")
            continue
        if report["device"]["fingerprint"] != fingerprint or not report["tests"]:
            continue
        if report["run_id"] == new_report["run_id"]:
            continue
        started = _started(report)
        if best is None or started > best[0]:
            best = (started, path, report)
    if best is None:
        messages.append(f"no baseline for this device ({label}, {fingerprint}) in {baseline}")
        return None, None, messages
    return best[1], best[2], messages


def gate_against(
    baseline: Path,
    new_report: Mapping[str, Any],
    exprs: Iterable[str | GateExpr],
    overrides: Mapping[str, Iterable[str | GateExpr]] | None = None,
    *,
    new_name: str = "this run",
) -> GateVerdict:
    """Find the baseline (file or directory, see :func:`find_baseline`) and evaluate."""
    path, report, messages = find_baseline(baseline, new_report)
    if report is None or path is None:
        verdict = GateVerdict(baseline=str(baseline), new=new_name, device_matched=False)
        verdict.messages.extend(messages)
        return verdict
    verdict = evaluate(
        report, new_report, exprs, overrides, baseline_name=str(path), new_name=new_name
    )
    verdict.messages[:0] = messages
    return verdict


def save_baseline(report_path: Path, baseline_dir: Path) -> Path:
    """Copy a valid, non-empty report into ``baseline_dir`` under a device-and-time name.

    Saving the same run twice is a no-op; a different file already at the name is refused.
    """
    report = load_report(report_path)
    require_tests(report, report_path)
    stamp = report["started_at"][:19].replace("-", "").replace(":", "").replace("T", "-")
    name = f"{device_slug(report['device'])}-{stamp}-{report['run_id'][:8]}.json"
    target = baseline_dir / name
    if target.exists():
        try:
            existing = load_report(target)
        except ReportError as exc:
            raise ReportError(target, f"exists and is not a report; not replaced ({exc})") from None
        if existing["run_id"] != report["run_id"]:
            raise ReportError(target, "exists and holds another run; not replaced")
        return target
    baseline_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, [Path(report_path).read_text(encoding="utf-8")])
    return target


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


def verdict_table(verdict: GateVerdict, *, all_rows: bool = False) -> Table:
    """The verdict as a table; rows ``within`` are left out unless ``all_rows``."""
    shown = [r for r in verdict.rows if all_rows or r.verdict != "within"]
    table = Table(
        list(_VERDICT_COLUMNS), title=f"Energy gate: {verdict.new} against {verdict.baseline}"
    )
    for r in shown:
        table.rows.append(
            [
                r.test_id,
                f"{r.metric}:{r.statistic}",
                r.threshold,
                r.baseline,
                r.new,
                r.change_pct,
                r.p_value,
                r.verdict.upper() if r.verdict == "regression" else r.verdict,
                r.note,
            ]
        )
    counts = ", ".join(
        f"{verdict.count(v)} {v}"
        for v in ("regression", "improvement", "within", "insufficient", "no-baseline")
        if verdict.count(v)
    )
    table.notes.extend(verdict.messages)
    outcome = "FAILED" if verdict.failed else "passed"
    table.notes.append(f"gate {outcome}: {counts or 'nothing compared'}")
    return table


def render_verdict(verdict: GateVerdict, fmt: Format = "table", *, all_rows: bool = False) -> str:
    """Render a verdict as ``table``, ``markdown``, ``csv`` or ``html`` (fragment)."""
    table = verdict_table(verdict, all_rows=all_rows or fmt == "csv")
    if fmt == "html":
        return render_html_table(table)
    return render(table, fmt)
