"""``edgeenergy history export``: one run's results for the dashboards CI users already have.

Two formats: Bencher Metric Format JSON (``bencher``: ``{benchmark: {measure slug: {value,
lower_value, upper_value}}}``, for ``bencher run --adapter json``) and github-action-benchmark's
``customSmallerIsBetter`` JSON (``github-action-benchmark``: ``[{name, unit, value, range,
extra}]``). A benchmark is named ``TEST_ID | DEVICE | POINT`` (the device's label, which says
``(simulated)`` for a virtual board, and the operating point's label), so that boards and
points never collide; two devices sharing a label get their fingerprint's head appended.

Bigger-is-better metrics (throughput) go to Bencher only: customSmallerIsBetter would read a
rise as a regression. Only results with a value whose test was not invalid are exported.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_edgeenergy.errors import EdgeEnergyError
from pytest_edgeenergy.report.keys import op_key, op_label
from pytest_edgeenergy.report.metric_names import higher_is_better
from pytest_edgeenergy.report.model import device_label
from pytest_edgeenergy.words import counted

if TYPE_CHECKING:
    from pytest_edgeenergy.history.store import HistoryStore

FORMATS = ("bencher", "github-action-benchmark")
DEFAULT_METRICS = ("energy_per_item", "energy_j", "latency_p90", "throughput")
"""Exported when no ``--metric`` is given (each where a test has it)."""
SLUG_MAX = 64
"""Bencher's longest measure slug."""


class ExportError(EdgeEnergyError):
    """Nothing sensible to export: a metric no result has, a run not in the history."""


@dataclass(frozen=True)
class ExportRow:
    """One metric of one test of one run, as a dashboard point."""

    name: str
    metric: str
    unit: str | None
    value: float
    lower: float | None
    upper: float | None
    stdev: float | None
    n: int | None
    device: str
    point: str
    simulated: bool
    run_id: str
    commit: str | None


def measure_slug(metric: str) -> str:
    """Bencher measure slug of a metric: ``energy_per_item`` -> ``energy-per-item``."""
    slug = re.sub(r"[^a-z0-9]+", "-", metric.lower()).strip("-")
    return slug[:SLUG_MAX].strip("-") or "metric"


def benchmark_name(test_id: str, device: str, point: str) -> str:
    """``TEST_ID | DEVICE | POINT``: the test, the device's label, the point's label."""
    return f"{test_id} | {device} | {op_label(point)}"


def export_rows(
    reports: Sequence[Mapping[str, Any]], metrics: Sequence[str] | None, fmt: str
) -> list[ExportRow]:
    """The rows of ``reports`` (one run each) for ``fmt``; ``metrics`` None: the defaults."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; allowed: {', '.join(FORMATS)}")
    labels = _device_labels(reports)
    carried = sorted({m for r in reports for t in r["tests"] for m in t.get("metrics") or {}})
    if metrics:
        unknown = [m for m in metrics if m not in carried]
        if unknown:
            raise ExportError(
                f"no result has the metric {', '.join(map(repr, unknown))}; "
                f"allowed: {', '.join(carried) or '(no metrics at all)'}"
            )
        if fmt == "github-action-benchmark":
            bigger = [m for m in metrics if higher_is_better(m)]
            if bigger:
                raise ExportError(
                    f"{', '.join(bigger)} is bigger-is-better, which github-action-benchmark's "
                    "customSmallerIsBetter would read backwards; export it with --format bencher"
                )
        wanted: Sequence[str] = metrics
    else:
        wanted = [m for m in DEFAULT_METRICS if fmt == "bencher" or not higher_is_better(m)]
    rows: list[ExportRow] = []
    for report in reports:
        device = report["device"]
        label = labels[device.get("fingerprint") or ""]
        commit = (report.get("git") or {}).get("commit")
        for test in report["tests"]:
            validity = test.get("validity") or {}
            if validity.get("valid") is False:
                continue
            point = op_key(test.get("params") or {})
            for metric in wanted:
                entry = (test.get("metrics") or {}).get(metric)
                row = _row(entry, test["id"], label, point, metric)
                if row is not None:
                    rows.append(
                        ExportRow(
                            **row,
                            simulated=bool(report.get("simulated") or device.get("simulated")),
                            run_id=str(report["run_id"]),
                            commit=commit,
                        )
                    )
    return rows


def _row(entry: Any, test_id: str, label: str, point: str, metric: str) -> dict[str, Any] | None:
    if not isinstance(entry, Mapping) or not _finite(entry.get("value")):
        return None
    stats = entry.get("stats") or {}
    low, high = _number(stats.get("min")), _number(stats.get("max"))
    both = low is not None and high is not None
    n = stats.get("n")
    return {
        "name": benchmark_name(test_id, label, point),
        "metric": metric,
        "unit": entry.get("unit"),
        "value": float(entry["value"]),
        "lower": low if both else None,
        "upper": high if both else None,
        "stdev": _number(stats.get("stdev")),
        "n": n if isinstance(n, int) else None,
        "device": label,
        "point": op_label(point),
    }


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: Any) -> float | None:
    return float(value) if _finite(value) else None


def _device_labels(reports: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each fingerprint's label; a label two fingerprints share gets the fingerprint's head."""
    by_print = {r["device"].get("fingerprint") or "": device_label(r["device"]) for r in reports}
    counts: dict[str, int] = {}
    for label in by_print.values():
        counts[label] = counts.get(label, 0) + 1
    return {
        fp: f"{label} #{fp[:8]}" if counts[label] > 1 and fp else label
        for fp, label in by_print.items()
    }


def to_bencher(rows: Iterable[ExportRow]) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: lower/upper values are the samples' min and max."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        metric: dict[str, float] = {"value": row.value}
        if row.lower is not None and row.upper is not None:
            metric["lower_value"], metric["upper_value"] = row.lower, row.upper
        out.setdefault(row.name, {})[measure_slug(row.metric)] = metric
    return out


def to_github_action_benchmark(rows: Iterable[ExportRow]) -> list[dict[str, Any]]:
    """customSmallerIsBetter entries named ``NAME - METRIC``; range ``± stdev``; extra the
    run, commit, samples' spread and, for a virtual board, that it is simulated."""
    out: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {
            "name": f"{row.name} - {row.metric}",
            "unit": row.unit or "",
            "value": row.value,
        }
        if row.stdev is not None:
            entry["range"] = f"± {row.stdev:.4g}"
        extra = [f"device: {row.device}", f"point: {row.point}", f"run: {row.run_id}"]
        if row.commit:
            extra.append(f"commit: {row.commit}")
        if row.lower is not None and row.upper is not None:
            n = f"n={row.n}, " if row.n is not None else ""
            extra.append(f"samples: {n}min {row.lower:.6g}, max {row.upper:.6g}")
        if row.simulated:
            extra.append("simulated: a virtual board, not a measurement of hardware")
        entry["extra"] = "\n".join(extra)
        out.append(entry)
    return out


def render(reports: Sequence[Mapping[str, Any]], fmt: str, metrics: Sequence[str] | None) -> str:
    """The export of ``reports`` in ``fmt`` as JSON text (ending in a newline)."""
    rows = export_rows(reports, metrics, fmt)
    doc: Any = to_bencher(rows) if fmt == "bencher" else to_github_action_benchmark(rows)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def stored_runs(store: HistoryStore, run_id: str | None) -> list[dict[str, Any]]:
    """Runs of the history as report documents: ``run_id``'s, or the newest of each device."""
    headers = store.run_reports(run_id)
    if run_id is not None and not headers:
        known = store.run_ids()
        newest = ", ".join(reversed(known[-5:])) or "(the history is empty)"
        raise ExportError(
            f"no run {run_id!r} in the history {store.name}; its {counted(len(known), 'run')}, "
            f"newest first: {newest}"
        )
    if not headers:
        raise ExportError(f"the history {store.name} holds no runs: nothing to export")
    return headers
