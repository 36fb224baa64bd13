"""What a gate reads of a report: per gated metric a column of the report's tests
(:class:`GateView`, small and quick to pickle), and the check that every expression's metric
is carried by some result (:func:`require_carried`)."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_edgeenergy.report.baselines import TotalDefinition, total_definition
from pytest_edgeenergy.report.keys import op_key
from pytest_edgeenergy.report.metric_names import carried_hint
from pytest_edgeenergy.verdict.expr import GateExpr, GateExprError


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
    operating point (:func:`report.keys.op_key`), status and the gated metrics (by column).

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
