"""``edgeenergy compare``: compare reports across runs and devices; optionally gate the later
reports against earlier ones of the same device (the table: :mod:`..present.compare`; the
gates: :mod:`..verdict.compare`).

Exit status: 0 ok, 1 a gate failed, 2 bad input (message on stderr, nothing written).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_edgeenergy.options_spec import add_arguments
from pytest_edgeenergy.present.compare import (
    JOINS,
    Digest,
    Source,
    TableBuilder,
    digest,
    digest_stream,
    html_page,
    render_plots,
)
from pytest_edgeenergy.present.tables import (
    FORMATS,
    Format,
    Table,
    render_csv,
    render_markdown,
    render_text,
)
from pytest_edgeenergy.present.verdict import render_verdict
from pytest_edgeenergy.report.load import ReportError, gc_paused, load_report, require_tests
from pytest_edgeenergy.report.writer import atomic_write_text
from pytest_edgeenergy.verdict.compare import CompareGates
from pytest_edgeenergy.verdict.expr import GateExprError, parse_expr
from pytest_edgeenergy.verdict.model import GateVerdict
from pytest_edgeenergy.verdict.view import expr_metrics


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeenergy compare",
        description="Compare pytest-edgeenergy reports across runs and devices; optionally "
        "gate the later reports against earlier ones of the same device.",
    )
    parser.add_argument("reports", nargs="+", type=Path, help="report JSON files")
    # The gate's options as pytest's --edge-fail, --edge-baseline, --edge-fail-insufficient.
    add_arguments(parser, ("fail", "baseline", "fail_insufficient"))
    parser.add_argument(
        "--join",
        choices=JOINS,
        default="point",
        help="how rows of different reports line up: 'point' (default), the same test at the "
        "same requested operating point ('gpu min', 'mode max' join across boards); "
        "'workload', the same test and parameters at each report's own point (one point per "
        "test in each report), e.g. 15W on an Orin Nano beside MODE_30W on an AGX Orin",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (terminal), markdown (a PR comment), csv (every column), html (with plots)",
    )
    parser.add_argument("--output", type=Path, help="write the comparison here, not stdout")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="write PNG figures here")
    return parser


def _append_step_summary(
    tables: Sequence[Table], verdicts: Sequence[GateVerdict], markdown: str | None = None
) -> None:
    """Append the Markdown comparison to ``$GITHUB_STEP_SUMMARY`` when CI provides one
    (``markdown``: that text when already rendered)."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    if markdown is None:
        markdown = "\n".join(render_markdown(table) for table in tables)
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
    if args.fail_insufficient and not exprs:
        return _error("--fail-insufficient makes a gate strict, but no gate is given (--fail)")
    fmt: Format = args.format
    # realpath, not Path.resolve: a loop of links is the loader's to word, not a traceback
    inputs = {os.path.realpath(p) for p in args.reports}
    if args.baseline is not None and args.baseline.is_file():
        inputs.add(os.path.realpath(args.baseline))
    if args.output is not None and os.path.realpath(args.output) in inputs:
        return _error(f"--output {args.output} is one of the input reports; not overwritten")
    gate_metrics = expr_metrics(exprs) if exprs else None
    builder = TableBuilder(markdown=fmt == "markdown", join=args.join)
    gater = CompareGates(exprs, args.baseline, strict=args.fail_insufficient) if exprs else None
    sources: list[Source] = []
    try:
        stream: Iterator[tuple[str, Digest]]
        if fmt == "html" or args.plots is not None:  # plots need whole reports
            for path in args.reports:
                report = load_report(path)
                require_tests(report, path)
                sources.append(Source(str(path), report))
            stream = (
                (s.name, digest(s.report, gate_metrics, source=s.name, join=args.join))
                for s in sources
            )
        else:
            stream = digest_stream(args.reports, gate_metrics, join=args.join)
        # Each report is tabled and gated as soon as it and all before it are read; an
        # error of reading wins over a gate's, as when the gates ran after all reading.
        gate_error: ReportError | GateExprError | None = None
        for name, report_digest in stream:
            builder.add(name, report_digest)
            if gater is not None and gate_error is None:
                try:
                    gater.add(name, report_digest)
                except (ReportError, GateExprError) as exc:
                    gate_error = exc
        if gate_error is not None:
            raise gate_error
    except (ReportError, GateExprError) as exc:
        return _error(str(exc))
    if exprs and args.baseline is None and builder.count < 2:
        return _error("--fail needs a --baseline or at least two reports to compare")
    verdicts = gater.verdicts if gater is not None else []

    messages = gater.messages if gater is not None else []
    shown = [] if fmt == "csv" else builder.display()
    if shown:
        shown[-1][0].notes.extend(messages)
    tables = [table for table, _ in shown]
    try:
        if fmt == "html":
            document = html_page(tables, verdicts, sources)
        else:
            if fmt == "markdown":
                document = "\n".join(render_markdown(t, rendered=lines) for t, lines in shown)
            elif fmt == "csv":
                document = render_csv(builder.table())
            else:
                document = "\n".join(render_text(table, wrap_notes=True) for table in tables)
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
        if fmt == "csv" and os.environ.get("GITHUB_STEP_SUMMARY"):
            tables = [table for table, _ in builder.display()]
            tables[-1].notes.extend(messages)
        _append_step_summary(tables, verdicts, document if fmt == "markdown" else None)
        if args.plots is not None:
            for line in render_plots(sources, args.plots).lines():
                print(line, file=sys.stderr)
    except OSError as exc:
        return _error(f"{exc.filename or ''}: {exc.strerror or exc}")
    return 1 if any(v.failed for v in verdicts) else 0
