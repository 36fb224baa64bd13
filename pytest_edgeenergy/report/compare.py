"""``edgeenergy compare``: the same experiments side by side across reports and devices.

Results are joined on workload x batch size x graph mode x precision x operating point
(:func:`.keys.join_key`). For each key and report the table shows J/item, latency p90
(latency mean, marked ``*``, where p90 was not measured), items/s and EDP (the metrics'
``value``), each with its ratio to report #1's value for the same key.
Exit status: 0 ok, 1 a gate failed, 2 bad input (message on stderr, nothing written).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_edgeenergy.report.gate import (
    GateExpr,
    GateExprError,
    GateVerdict,
    evaluate,
    find_baseline,
    parse_expr,
    render_verdict,
)
from pytest_edgeenergy.report.keys import JoinKey, join_key, op_label
from pytest_edgeenergy.report.load import (
    ReportError,
    gc_paused,
    load_report,
    long_rows,
    require_tests,
    version_notes,
)
from pytest_edgeenergy.report.model import device_label
from pytest_edgeenergy.report.tables import (
    FORMATS,
    Format,
    Marked,
    Ratio,
    Table,
    html_document,
    render,
    render_html_table,
    render_markdown,
)
from pytest_edgeenergy.report.writer import atomic_write_text

# (column label, metric names in order of preference, display scale)
COMPARE_METRICS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("J/item", ("energy_per_item",), 1.0),
    ("latency p90 [ms]", ("latency_p90", "latency_mean"), 1e3),
    ("items/s", ("throughput",), 1.0),
    ("EDP [J*s]", ("edp",), 1.0),
)


@dataclass(frozen=True)
class Source:
    """One report taking part in a comparison."""

    name: str
    report: dict[str, Any]

    @property
    def label(self) -> str:
        return device_label(self.report["device"])


# Per key: the test's status, and per compared metric (value, used a fallback metric).
_Row = tuple[str, list[tuple[float | None, bool]]]


def _index(source: Source, notes: list[str]) -> dict[JoinKey, _Row]:
    index: dict[JoinKey, _Row] = {}
    duplicates = 0
    for test in source.report["tests"]:
        if test["status"] == "skipped":
            continue
        key = join_key(test)
        if key in index:
            duplicates += 1
            continue
        index[key] = (test["status"], [_metric_value(test, m[1]) for m in COMPARE_METRICS])
    if duplicates:
        notes.append(f"{source.name}: {duplicates} results repeat an earlier key; first kept")
    return index


def _metric_value(test: Mapping[str, Any], names: Sequence[str]) -> tuple[float | None, bool]:
    """The first available metric's value, and whether it was a fallback."""
    for i, name in enumerate(names):
        metric = test["metrics"].get(name)
        if metric is not None and metric.get("value") is not None:
            return float(metric["value"]), i > 0
    return None, False


def compare_table(sources: Sequence[Source]) -> Table:
    """The comparison table for ``sources`` (the first is the reference for ratios)."""
    notes: list[str] = []
    indexes = [_index(s, notes) for s in sources]
    keys = sorted(set().union(*indexes), key=JoinKey.sort_key)
    columns = ["workload", "batch", "graph", "precision", "operating point", "report", "device"]
    columns.append("status")
    for label, _, _ in COMPARE_METRICS:
        columns += [label, "ratio"]
    table = Table(columns, title="Energy comparison")
    scales = [m[2] for m in COMPARE_METRICS]
    labels = [(f"#{i + 1}", s.label) for i, s in enumerate(sources)]
    fallback = False
    no_reference: list[tuple[float | None, bool]] = [(None, False)] * len(COMPARE_METRICS)
    for key in keys:
        reference = indexes[0].get(key)
        ref_values = reference[1] if reference else no_reference
        key_cells = [
            key.workload,
            key.batch_size,
            key.graph_mode,
            key.precision,
            op_label(key.op),
        ]
        for (number, label), index in zip(labels, indexes, strict=True):
            found = index.get(key)
            if found is None:
                continue
            status, values = found
            row: list[Any] = [*key_cells, number, label, status]
            for (value, used_fallback), (ref_value, _), scale in zip(
                values, ref_values, scales, strict=True
            ):
                shown = value * scale if value is not None else None
                if used_fallback:
                    fallback = True
                    row.append(Marked(shown, "*"))
                else:
                    row.append(shown)
                row.append(Ratio(value / ref_value) if value is not None and ref_value else None)
            table.rows.append(row)
    for i, source in enumerate(sources):
        report = source.report
        device = report["device"]
        l4t = f", L4T {device['l4t']}" if device.get("l4t") else ""
        table.notes.append(
            f"#{i + 1} {source.name}: {source.label}{l4t}, started {report['started_at']}, "
            f"{len(report['tests'])} tests"
        )
    table.notes.append("ratio: value / value of report #1 for the same key")
    if fallback:
        table.notes.append("* latency mean where latency p90 was not measured")
    table.notes.extend(notes)
    table.notes.extend(version_notes([(s.name, s.report) for s in sources]))
    return table


def compare_frame_rows(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """Long rows (see :mod:`.load`) of all sources, for plots."""
    rows: list[dict[str, Any]] = []
    for source in sources:
        rows.extend(long_rows(source.report, source.name))
    return rows


def _plots(sources: Sequence[Source], out_dir: Path) -> list[Path]:
    from pytest_edgeenergy.report.load import frame_from_rows
    from pytest_edgeenergy.report.plots import render_all

    return render_all(frame_from_rows(compare_frame_rows(sources)), out_dir)


def _html(table: Table, verdicts: Sequence[GateVerdict], sources: Sequence[Source]) -> str:
    body = [render_html_table(table)]
    body += [render_verdict(v, "html") for v in verdicts]
    with tempfile.TemporaryDirectory(prefix="edgeenergy-plots-") as tmp:
        for png in _plots(sources, Path(tmp)):
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            body.append(f'<img alt="{png.stem}" src="data:image/png;base64,{data}">')
    return html_document("pytest-edgeenergy comparison", "\n".join(body) + "\n")


def _gates(
    sources: Sequence[Source], exprs: Sequence[GateExpr], baseline: Path | None
) -> tuple[list[GateVerdict], list[str]]:
    """Verdicts for each gated report and messages; raises ReportError on bad input."""
    verdicts: list[GateVerdict] = []
    messages: list[str] = []
    for i, source in enumerate(sources):
        if baseline is not None:
            path, base_report, found = find_baseline(baseline, source.report)
            messages.extend(found)
            if base_report is None or path is None:
                continue
            base_name = str(path)
        else:
            if i == 0:
                continue
            earlier = [
                s
                for s in sources[:i]
                if s.report["device"]["fingerprint"] == source.report["device"]["fingerprint"]
            ]
            if not earlier:
                messages.append(
                    f"no baseline for this device: no earlier report of {source.label} "
                    f"before {source.name}; not gated"
                )
                continue
            base_report, base_name = earlier[-1].report, earlier[-1].name
        verdict = evaluate(
            base_report, source.report, exprs, baseline_name=base_name, new_name=source.name
        )
        gated = [r for r in verdict.rows if r.verdict != "no-baseline"]
        if verdict.rows and not gated:
            raise ReportError(
                base_name,
                f"baseline has no results matching {source.name} (same device, but none of "
                "its tests at the same operating points); wrong baseline?",
            )
        verdicts.append(verdict)
    return verdicts, messages


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeenergy compare",
        description="Compare pytest-edgeenergy reports across runs and devices; optionally "
        "gate the later reports against earlier ones of the same device.",
    )
    parser.add_argument("reports", nargs="+", type=Path, help="report JSON files")
    parser.add_argument(
        "--fail",
        action="append",
        default=[],
        metavar="EXPR",
        help="gate, e.g. energy_per_item:mean:5%% or latency_p90:mean:10ms (repeatable)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="baseline report or directory of reports (default: the previous report of the "
        "same device on the command line)",
    )
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--output", type=Path, help="write the comparison here, not stdout")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="write PNG figures here")
    return parser


def _append_step_summary(table: Table, verdicts: Sequence[GateVerdict]) -> None:
    """Append the Markdown comparison to ``$GITHUB_STEP_SUMMARY`` when CI provides one."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    markdown = render_markdown(table)
    markdown += "".join("\n" + render_verdict(v, "markdown") for v in verdicts)
    try:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    except OSError as exc:
        print(f"edgeenergy compare: warning: GITHUB_STEP_SUMMARY {summary}: {exc}", file=sys.stderr)


def _error(message: str) -> int:
    print(f"edgeenergy compare: error: {message}", file=sys.stderr)
    return 2


def compare_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``edgeenergy compare``; returns the exit status (0, 1 or 2)."""
    with gc_paused():
        return _compare_main(argv)


def _compare_main(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # argparse has printed usage and the error
        return exc.code if isinstance(exc.code, int) else 2
    try:
        exprs = [parse_expr(e) for e in args.fail]
    except GateExprError as exc:
        return _error(str(exc))
    fmt: Format = args.format
    inputs = {p.resolve() for p in args.reports}
    if args.baseline is not None and args.baseline.is_file():
        inputs.add(args.baseline.resolve())
    if args.output is not None and args.output.resolve() in inputs:
        return _error(f"--output {args.output} is one of the input reports; not overwritten")
    try:
        sources = []
        for path in args.reports:
            report = load_report(path)
            require_tests(report, path)
            sources.append(Source(str(path), report))
        verdicts, gate_messages = _gates(sources, exprs, args.baseline) if exprs else ([], [])
    except (ReportError, GateExprError) as exc:
        return _error(str(exc))
    if exprs and args.baseline is None and len(sources) < 2:
        return _error("--fail needs a --baseline or at least two reports to compare")

    table = compare_table(sources)
    table.notes.extend(gate_messages)
    try:
        if fmt == "html":
            document = _html(table, verdicts, sources)
        else:
            document = render(table, fmt)
            if fmt != "csv":
                document += "".join("\n" + render_verdict(v, fmt) for v in verdicts)
        if args.output is not None:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(args.output, [document])
        else:
            sys.stdout.write(document)
        if fmt == "csv":
            for verdict in verdicts:
                sys.stderr.write(render_verdict(verdict, "table"))
        _append_step_summary(table, verdicts)
        if args.plots is not None:
            for png in _plots(sources, args.plots):
                print(f"wrote {png}", file=sys.stderr)
    except OSError as exc:
        return _error(f"{exc.filename or ''}: {exc.strerror or exc}")
    return 1 if any(v.failed for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(compare_main())
