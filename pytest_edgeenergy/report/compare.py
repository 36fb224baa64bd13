"""``edgeenergy compare``: the same experiments side by side across reports and devices.

Results are joined on workload x batch size x graph mode x precision x requested operating
point x test x every other parameter (:func:`.keys.join_key`); figures of other window
labels (an ``energy`` window ``load``, an ``edge_bench`` phase) are rows of their own. For
each key and report the table shows, as the results carry them, J/item, latency p90
(latency mean, marked ``*``, where p90 was not measured), items/s and EDP, and/or the
window figures (energy, net energy, mean and peak power, duration), each with its ratio to
report #1's value for the same key.
Exit status: 0 ok, 1 a gate failed, 2 bad input (message on stderr, nothing written).

Large comparisons (50 reports of 2,000 results, 200 MB of JSON) are CPU-bound Python, so:
each report is read, validated and reduced to a :class:`Digest` (its table entries and the
gated metrics, a fraction of its size) in forked workers and in this process alike
(:mod:`.parallel`); each digest is tabled, rendered (Markdown) and gated as soon as it and
all before it are in, while later reports are still being read; whole reports are kept
only for plots (``--plots``, HTML).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import html
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pytest_edgeenergy.report.baselines import describe, find_baselines
from pytest_edgeenergy.report.gate import (
    GateExpr,
    GateExprError,
    GateNeeds,
    GateVerdict,
    GateView,
    evaluate_views,
    expr_metrics,
    gate_view,
    parse_expr,
    render_verdict,
    require_carried,
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
from pytest_edgeenergy.report.parallel import shared_map, workers_for
from pytest_edgeenergy.report.tables import (
    FORMATS,
    Format,
    MarkdownRows,
    Marked,
    Ratio,
    Table,
    html_document,
    markdown_rows,
    render,
    render_html_table,
    render_markdown,
)
from pytest_edgeenergy.report.writer import atomic_write_text

if TYPE_CHECKING:
    from pytest_edgeenergy.report.plots import Rendered

_new_key = tuple.__new__

# (column label, metric names in order of preference, display scale)
BENCH_COLUMNS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("J/item", ("energy_per_item",), 1.0),
    ("latency p90 [ms]", ("latency_p90", "latency_mean"), 1e3),
    ("items/s", ("throughput",), 1.0),
    ("EDP [J*s]", ("edp",), 1.0),
)
"""Columns of ``edge_bench`` results (work per item)."""
WINDOW_COLUMNS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("energy [J]", ("energy_j",), 1.0),
    ("net [J]", ("energy_net_j",), 1.0),
    ("mean [W]", ("power_mean",), 1.0),
    ("peak [W]", ("power_peak",), 1.0),
    ("time [s]", ("duration_s",), 1.0),
)
"""Columns of energy windows (the ``energy`` fixture; phases such as ``load``)."""
COMPARE_METRICS = BENCH_COLUMNS + WINDOW_COLUMNS
"""Every compared metric; a table shows the bench or window columns or both, as its
first report's results need (see :class:`Digest`)."""
_N_BENCH = len(BENCH_COLUMNS)


@dataclass(frozen=True)
class Source:
    """One report taking part in a comparison."""

    name: str
    report: dict[str, Any]

    @property
    def label(self) -> str:
        return device_label(self.report["device"])


# Per key: the test's status, the compared metrics' cells as shown with their ratio cells
# left empty (value x scale, or Marked for a fallback metric), and the raw values.
_Entry = tuple[str, tuple[Any, ...], tuple[float | None, ...]]


@dataclass(frozen=True)
class Digest:
    """What a comparison reads of one report: a fraction of its size, so that reports can be
    read in worker processes and only digests sent back (see :func:`digest`)."""

    header: dict[str, Any]
    """The report without its ``tests``."""
    n_tests: int
    index: dict[JoinKey, _Entry]
    fallback: bool
    """Some result shows a fallback metric (latency mean for p90)."""
    gate: GateView | None
    """The gated metrics, when the comparison gates."""
    bench: bool = True
    """Some result has per-item (``edge_bench``) figures."""
    windows: bool = False
    """Some result or window label has window figures but no per-item ones."""

    @property
    def label(self) -> str:
        return device_label(self.header["device"])


def _labels(names: tuple[str, ...]) -> list[str]:
    """Window labels of prefixed metric names (``load.energy_j`` -> ``load``), in order."""
    out: dict[str, None] = {}
    for name in names:
        label, dot, rest = name.partition(".")
        if dot and rest in _WINDOW_NAMES:
            out[label] = None
    return list(out)


_WINDOW_NAMES = frozenset(names[0] for _, names, _ in WINDOW_COLUMNS)


def digest(
    report: Mapping[str, Any], gate_metrics: GateNeeds | None = None, *, source: str = "report"
) -> Digest:
    """The :class:`Digest` of a validated report; ``gate_metrics``: the metrics gates read
    (None: no gate view). Two results with the same key (same test, parameters and
    operating point) are a :class:`~.load.ReportError` naming both, never merged."""
    index: dict[JoinKey, _Entry] = {}
    owners: dict[JoinKey, str] = {}
    fallback = bench = windows = False
    # Repeated strings become one object each, which pickling then writes once.
    strings: dict[Any, Any] = {None: None}
    share = strings.setdefault
    plan = [(names[0], names[1:], scale) for _, names, scale in COMPARE_METRICS]
    labels_of: dict[tuple[str, ...], list[str]] = {}
    for test in report["tests"]:
        status = test["status"]
        if status == "skipped":
            continue
        workload, batch, graph, precision, op, name, params, _ = join_key(test)
        key: JoinKey = _new_key(
            JoinKey,
            (
                share(workload, workload),
                batch,
                share(graph, graph),
                share(precision, precision),
                op,
                share(name, name),
                share(params, params),
                "",
            ),
        )
        if key in index:
            raise ReportError(
                source,
                f"tests {owners[key]} and {test['id']} have the same key (test, parameters "
                "and operating point): a result would be lost; give them distinct parameters",
            )
        owners[key] = test["id"]
        metrics = test["metrics"]
        names = tuple(metrics)
        labels = labels_of.get(names)
        if labels is None:
            labels = labels_of[names] = _labels(names)
        prefixes = [("", key)]
        if labels:
            prefixes += [(f"{lb}.", key._replace(window=share(lb, lb))) for lb in labels]
        for prefix, row_key in prefixes:
            cells: list[Any] = []
            values: list[float | None] = []
            for metric_name, others, scale in plan:
                metric = metrics.get(prefix + metric_name)
                raw = metric.get("value") if metric is not None else None
                value: float | None
                cell: Any
                if raw is not None:
                    number = float(raw)
                    value, cell = number, (number if scale == 1.0 else number * scale)
                elif others:
                    value = _metric_value(metrics, [prefix + o for o in others])[0]
                    if value is None:
                        cell = None
                    else:
                        fallback = True
                        cell = Marked(value if scale == 1.0 else value * scale, "*")
                else:
                    value = cell = None
                # x * 1.0 == x: the same object then serves as value and as cell.
                cells.append(cell)
                cells.append(None)
                values.append(value)
            if prefix + "energy_per_item" in metrics:
                bench = True
            elif any(v is not None for v in values[_N_BENCH:]):
                windows = True
            index[row_key] = (share(status, status), tuple(cells), tuple(values))
    header = {k: v for k, v in report.items() if k != "tests"}
    gate = gate_view(report, gate_metrics) if gate_metrics is not None else None
    return Digest(header, len(report["tests"]), index, fallback, gate, bench, windows)


def _metric_value(metrics: Mapping[str, Any], names: Sequence[str]) -> tuple[float | None, bool]:
    """The first available metric's value, and whether it was a fallback."""
    for i, name in enumerate(names):
        metric = metrics.get(name)
        if metric is not None and metric.get("value") is not None:
            return float(metric["value"]), i > 0
    return None, False


def compare_table(sources: Sequence[Source]) -> Table:
    """The comparison table for ``sources`` (the first is the reference for ratios)."""
    return digest_table([(s.name, digest(s.report, source=s.name)) for s in sources])


def digest_table(digests: Sequence[tuple[str, Digest]]) -> Table:
    """:func:`compare_table` from ``(name, digest)`` pairs."""
    builder = _TableBuilder()
    for name, report_digest in digests:
        builder.add(name, report_digest)
    return builder.table()


class _Meta(NamedTuple):
    """What the table's notes say of one report."""

    name: str
    header: dict[str, Any]
    label: str
    n_tests: int
    fallback: bool


class _TableBuilder:
    """The comparison table, one report at a time (the first added is the reference), so
    that a report's rows are made while later reports are still being read.

    With ``markdown``, each report's rows are rendered as Markdown lines at once and only the
    lines kept (see :meth:`markdown`); :meth:`table` then has no rows.
    """

    def __init__(self, *, markdown: bool = False) -> None:
        self.columns: list[str] = []
        self.first_ratio = 0
        self.cells = self.values = slice(None)
        self.metas: list[_Meta] = []
        self.reference: dict[JoinKey, _Entry] = {}
        self.rows: list[dict[JoinKey, list[Any]]] = []
        self.lines: list[dict[JoinKey, str]] | None = [] if markdown else None
        self.numeric: list[bool] = []
        self.key_cells: dict[JoinKey, tuple[Any, ...]] = {}

    def _choose_columns(self, first: Digest) -> None:
        """The metric columns: per item, windows or both, as the first report needs."""
        if first.windows and not first.bench:
            shown, self.cells, self.values = (
                WINDOW_COLUMNS,
                slice(2 * _N_BENCH, None),
                slice(_N_BENCH, None),
            )
        elif first.windows:
            shown, self.cells, self.values = COMPARE_METRICS, slice(None), slice(None)
        else:
            shown, self.cells, self.values = (
                BENCH_COLUMNS,
                slice(0, 2 * _N_BENCH),
                slice(0, _N_BENCH),
            )
        columns = ["workload", "batch", "graph", "precision", "operating point", "params"]
        columns += ["report", "device", "status"]
        for label, _, _ in shown:
            columns += [label, "ratio"]
        self.columns = columns
        self.first_ratio = len(columns) - 2 * len(shown) + 1
        self.numeric = [False] * len(columns)

    @property
    def count(self) -> int:
        return len(self.metas)

    def add(self, name: str, new: Digest) -> None:
        number, label = f"#{len(self.metas) + 1}", new.label
        if not self.metas:
            self.reference = new.index
            self._choose_columns(new)
        reference = self.reference
        first_ratio = self.first_ratio
        key_cells = self.key_cells
        cell_part, value_part = self.cells, self.values
        rows: dict[JoinKey, list[Any]] = {}
        for key, (status, cells, values) in new.index.items():
            shared = key_cells.get(key)
            if shared is None:
                params = key.params.replace(",", " ")
                if key.window:
                    params = f"{params} [{key.window}]".lstrip()
                shared = key_cells[key] = (
                    key.workload,
                    key.batch_size,
                    key.graph_mode,
                    key.precision,
                    op_label(key.op),
                    params or None,
                )
            row = [*shared, number, label, status, *cells[cell_part]]
            found = reference.get(key)
            if found is not None:
                row[first_ratio::2] = [
                    Ratio(value / ref) if value is not None and ref else None
                    for value, ref in zip(values[value_part], found[2][value_part], strict=True)
                ]
            rows[key] = row
        meta = _Meta(name, new.header, label, new.n_tests, new.fallback)
        self.metas.append(meta)
        if self.lines is None:
            self.rows.append(rows)
            return
        rendered = markdown_rows(list(rows.values()), len(self.columns))
        self.lines.append(dict(zip(rows, rendered.lines, strict=True)))
        self.numeric = [a or b for a, b in zip(self.numeric, rendered.numeric, strict=True)]

    def _keys(self) -> list[JoinKey]:
        parts = self.rows if self.lines is None else self.lines
        return sorted(set().union(*parts), key=JoinKey.sort_key)

    def table(self) -> Table:
        """The table (rows by key, then report; no rows when rendering Markdown ahead)."""
        table = Table(list(self.columns), title="Energy comparison")
        if self.rows:
            out = table.rows
            for key in self._keys():
                for rows in self.rows:
                    row = rows.get(key)
                    if row is not None:
                        out.append(row)
        metas = self.metas
        for i, meta in enumerate(metas):
            device = meta.header["device"]
            l4t = f", L4T {device['l4t']}" if device.get("l4t") else ""
            table.notes.append(
                f"#{i + 1} {meta.name}: {meta.label}{l4t}, started {meta.header['started_at']}, "
                f"{meta.n_tests} tests"
            )
        table.notes.append("ratio: value / value of report #1 for the same key")
        if any(meta.fallback for meta in metas):
            table.notes.append("* latency mean where latency p90 was not measured")
        table.notes.extend(version_notes([(meta.name, meta.header) for meta in metas]))
        return table

    def markdown(self) -> MarkdownRows:
        """The rows' Markdown lines in table order (built with ``markdown``)."""
        assert self.lines is not None
        out: list[str] = []
        for key in self._keys():
            for lines in self.lines:
                line = lines.get(key)
                if line is not None:
                    out.append(line)
        return MarkdownRows(out, list(self.numeric))


# ---------------------------------------------------------------------------------------
# reading many reports


def _digest_path(path: Path, gate_metrics: GateNeeds | None) -> Digest:
    report = load_report(path)
    require_tests(report, path)
    return digest(report, gate_metrics, source=str(path))


def digest_stream(
    paths: Sequence[Path], gate_metrics: GateNeeds | None = None, *, workers: int | None = None
) -> Iterator[tuple[str, Digest]]:
    """``(str(path), digest)`` of reports that must each hold tests, in ``paths`` order,
    read by forked workers besides this process when there is much to read (``workers``:
    how many; default from the CPUs and the sizes, see :func:`.parallel.workers_for`).

    Raises the :class:`~.load.ReportError` of the first bad file in ``paths`` order, as
    reading them one by one would (reports before it are yielded first).
    """
    count = workers_for(paths) if workers is None else workers
    func = functools.partial(_digest_path, gate_metrics=gate_metrics)
    ready: dict[int, Digest | Exception] = {}
    next_i = 0
    with contextlib.closing(shared_map(func, paths, count)) as outcomes:
        for i, outcome in outcomes:
            ready[i] = outcome
            while next_i in ready:
                got = ready.pop(next_i)
                if isinstance(got, Exception):
                    raise got
                yield str(paths[next_i]), got
                next_i += 1


def load_digests(
    paths: Sequence[Path], gate_metrics: GateNeeds | None = None, *, workers: int | None = None
) -> list[Digest]:
    """:func:`digest_stream` as a list."""
    return [d for _, d in digest_stream(paths, gate_metrics, workers=workers)]


def compare_frame_rows(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """Long rows (see :mod:`.load`) of all sources, for plots."""
    rows: list[dict[str, Any]] = []
    for source in sources:
        rows.extend(long_rows(source.report, source.name))
    return rows


def _plots(sources: Sequence[Source], out_dir: Path) -> Rendered:
    from pytest_edgeenergy.report.load import frame_from_rows
    from pytest_edgeenergy.report.plots import render_all

    return render_all(frame_from_rows(compare_frame_rows(sources)), out_dir)


def _html(table: Table, verdicts: Sequence[GateVerdict], sources: Sequence[Source]) -> str:
    body = [render_html_table(table)]
    body += [render_verdict(v, "html") for v in verdicts]
    with tempfile.TemporaryDirectory(prefix="edgeenergy-plots-") as tmp:
        rendered = _plots(sources, Path(tmp))
        for png in rendered:
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            body.append(f'<img alt="{png.stem}" src="data:image/png;base64,{data}">')
        body += [f"<p>no plot: {html.escape(str(note))}</p>" for note in rendered.notes]
    return html_document("pytest-edgeenergy comparison", "\n".join(body) + "\n")


class _Gater:
    """The gates of a comparison, one report at a time in command-line order."""

    def __init__(
        self, exprs: Sequence[GateExpr], baseline: Path | None, *, strict: bool = False
    ) -> None:
        self.exprs = exprs
        self.baseline = baseline
        self.strict = strict
        self.needs = expr_metrics(exprs)
        self.verdicts: list[GateVerdict] = []
        self.messages: list[str] = []
        self.count = 0
        self.latest: dict[str, tuple[str, GateView | None]] = {}
        self.loaded: dict[Path, dict[str, Any] | ReportError] = {}
        self.views: dict[Path, GateView] = {}

    def _load(self, path: Path) -> dict[str, Any]:
        # One read per baseline file, however many reports look for their baseline.
        if path not in self.loaded:
            try:
                self.loaded[path] = load_report(path)
            except ReportError as exc:
                self.loaded[path] = exc
        found = self.loaded[path]
        if isinstance(found, ReportError):
            raise found
        return found

    def add(self, name: str, new: Digest) -> None:
        """Gate ``new`` if it has a baseline; raises ReportError or GateExprError."""
        first = self.count == 0
        self.count += 1
        assert new.gate is not None  # digested with the gated metrics
        if self.baseline is not None or not first:
            require_carried(new.gate, self.exprs, name)
        base_view: GateView | list[GateView]
        if self.baseline is not None:
            found, messages = find_baselines(self.baseline, new.header, load=self._load)
            self.messages.extend(messages)
            if not found:
                return
            base_name = describe(self.baseline, found)
            for path, base_report in found:
                if path not in self.views:
                    self.views[path] = gate_view(base_report, self.needs)
            base_view = [self.views[path] for path, _ in found]
        else:
            fingerprint = new.header["device"]["fingerprint"]
            earlier = self.latest.get(fingerprint)
            self.latest[fingerprint] = (name, new.gate)
            if first:
                return
            if earlier is None:
                self.messages.append(
                    f"no baseline for this device: no earlier report of {new.label} "
                    f"before {name}; not gated"
                )
                return
            base_name, earlier_view = earlier
            assert earlier_view is not None  # digested with the gated metrics
            base_view = earlier_view
        verdict = evaluate_views(
            base_view,
            new.gate,
            self.exprs,
            strict=self.strict,
            baseline_name=base_name,
            new_name=name,
        )
        gated = [r for r in verdict.rows if r.verdict != "no-baseline"]
        if verdict.rows and not gated:
            raise ReportError(
                base_name,
                f"baseline has no results matching {name} (same device, but none of "
                "its tests at the same operating points); wrong baseline?",
            )
        self.verdicts.append(verdict)


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
        help="baseline report, or directory of reports: the newest runs of each device are "
        "the baseline, judged by their run-to-run spread; a missing or empty directory is "
        "'no baseline yet' (default: the previous report of the same device on the command "
        "line)",
    )
    parser.add_argument(
        "--fail-insufficient",
        action="store_true",
        help="strict gate: a result too thinly measured to judge ('insufficient': too few "
        "repeats or runs, or a failed or invalid result on either side) fails it too",
    )
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--output", type=Path, help="write the comparison here, not stdout")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="write PNG figures here")
    return parser


def _append_step_summary(
    table: Table, verdicts: Sequence[GateVerdict], markdown: str | None = None
) -> None:
    """Append the Markdown comparison to ``$GITHUB_STEP_SUMMARY`` when CI provides one
    (``markdown``: that text when already rendered)."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    if markdown is None:
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
    if args.fail_insufficient and not exprs:
        return _error("--fail-insufficient makes a gate strict, but no gate is given (--fail)")
    fmt: Format = args.format
    inputs = {p.resolve() for p in args.reports}
    if args.baseline is not None and args.baseline.is_file():
        inputs.add(args.baseline.resolve())
    if args.output is not None and args.output.resolve() in inputs:
        return _error(f"--output {args.output} is one of the input reports; not overwritten")
    gate_metrics = expr_metrics(exprs) if exprs else None
    builder = _TableBuilder(markdown=fmt == "markdown")
    gater = _Gater(exprs, args.baseline, strict=args.fail_insufficient) if exprs else None
    sources: list[Source] = []
    try:
        stream: Iterator[tuple[str, Digest]]
        if fmt == "html" or args.plots is not None:  # plots need whole reports
            for path in args.reports:
                report = load_report(path)
                require_tests(report, path)
                sources.append(Source(str(path), report))
            stream = ((s.name, digest(s.report, gate_metrics, source=s.name)) for s in sources)
        else:
            stream = digest_stream(args.reports, gate_metrics)
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

    table = builder.table()
    if gater is not None:
        table.notes.extend(gater.messages)
    try:
        if fmt == "html":
            document = _html(table, verdicts, sources)
        else:
            if fmt == "markdown":
                document = render_markdown(table, rendered=builder.markdown())
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
        _append_step_summary(table, verdicts, document if fmt == "markdown" else None)
        if args.plots is not None:
            for line in _plots(sources, args.plots).lines():
                print(line, file=sys.stderr)
    except OSError as exc:
        return _error(f"{exc.filename or ''}: {exc.strerror or exc}")
    return 1 if any(v.failed for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(compare_main())
