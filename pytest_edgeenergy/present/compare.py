"""The comparison of ``edgeenergy compare``: the same experiments side by side across
reports and devices.

Results are joined on workload x batch size x graph mode x precision x requested operating
point x test x every other parameter (:func:`.keys.join_key`); with ``--join workload``
without the point, so that each report's own point lines up (:data:`JOINS`). Figures of
other window labels (an ``energy`` window ``load``, an ``edge_bench`` phase) are rows of
their own. For each key and report the table shows, as the results carry them, J/item,
latency p90 (latency mean, marked ``*``, where p90 was not measured), items/s and EDP,
and/or the window figures (energy, net energy, mean and peak power, duration), each with its
ratio to report #1's value for the same key; rows without one say why in a note.

CSV has every column (:meth:`_TableBuilder.table`). The terminal, Markdown and HTML show
:meth:`_TableBuilder.display`: per-item rows and window-only rows as two tables, what every
row shares in a header line, a column per parameter that tells rows apart.

Large comparisons (50 reports of 2,000 results, 200 MB of JSON) are CPU-bound Python, so:
each report is read, validated and reduced to a :class:`Digest` (its table entries and the
gated metrics, a fraction of its size) in forked workers and in this process alike
(:mod:`.parallel`); each digest is tabled, rendered (Markdown) and gated as soon as it and
all before it are in, while later reports are still being read; whole reports are kept
only for plots (``--plots``, HTML).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import html
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pytest_edgeenergy.present.tables import (
    MarkdownRows,
    Marked,
    Ratio,
    Table,
    cell_text,
    html_document,
    markdown_rows,
    render_html_table,
    shared_lines,
)
from pytest_edgeenergy.present.verdict import render_verdict
from pytest_edgeenergy.report.keys import (
    JoinKey,
    graph_shown,
    join_key,
    op_label,
    op_words,
    split_params,
)
from pytest_edgeenergy.report.load import (
    ReportError,
    load_report,
    long_rows,
    require_tests,
    version_notes,
)
from pytest_edgeenergy.report.model import device_label
from pytest_edgeenergy.report.parallel import shared_map, workers_for
from pytest_edgeenergy.verdict.model import GateVerdict
from pytest_edgeenergy.verdict.view import (
    GateNeeds,
    GateView,
    gate_view,
)
from pytest_edgeenergy.words import counted

if TYPE_CHECKING:
    from pytest_edgeenergy.present.plots import Rendered

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


# Per key: the test's status, its requested operating point (:func:`.keys.op_key`), the
# compared metrics' cells as shown with their ratio cells left empty (value x scale, or
# Marked for a fallback metric), and the raw values.
_Entry = tuple[str, str, tuple[Any, ...], tuple[float | None, ...]]

Join = Literal["point", "workload"]
JOINS: tuple[Join, ...] = ("point", "workload")
"""How rows of different reports line up. ``point`` (the default): the requested operating
point is part of the key, so ``gpu min`` joins ``gpu min`` and ``15W`` joins ``15W``.
``workload``: it is not, so each report's own point lines up (``15W`` on an Orin Nano
beside ``MODE_30W`` on an AGX Orin), one point per test and report."""


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
    words: tuple[tuple[str, str], ...] = ()
    """``(word, what it was on this board)`` for points asked for by a word, e.g.
    ``("mode max", "MAXN_SUPER")``, ``("gpu min", "gpu306MHz")``."""

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


def _same_key(first: str, second: str, first_op: str, second_op: str, by_point: bool) -> str:
    if by_point or first_op == second_op:
        return (
            f"tests {first} and {second} have the same key (test, parameters and operating "
            "point): a result would be lost; give them distinct parameters"
        )
    return (
        f"--join workload lines up one operating point per test and report, but tests "
        f"{first} ({op_label(first_op)}) and {second} ({op_label(second_op)}) differ only in "
        "it; compare reports of one point each, or join by point (the default)"
    )


def _words_of(test: Mapping[str, Any]) -> list[tuple[str, str]]:
    """:func:`.keys.op_words` of a test whose point was asked for by a word (cheap when not)."""
    params = test.get("params")
    point = params.get("operating_point") if type(params) is dict else None
    requested = point.get("requested") if type(point) is dict else None
    if type(requested) is not dict or "as" not in requested:
        return []
    assert params is not None
    return op_words(params)


def digest(
    report: Mapping[str, Any],
    gate_metrics: GateNeeds | None = None,
    *,
    source: str = "report",
    join: Join = "point",
) -> Digest:
    """The :class:`Digest` of a validated report; ``gate_metrics``: the metrics gates read
    (None: no gate view); ``join``: see :data:`JOINS`. Two results with the same key (same
    test, parameters and, joining by point, operating point) are a
    :class:`~.load.ReportError` naming both, never merged."""
    index: dict[JoinKey, _Entry] = {}
    owners: dict[JoinKey, str] = {}
    fallback = bench = windows = False
    by_point = join == "point"
    words: dict[tuple[str, str], None] = {}
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
        op = share(op, op)
        key: JoinKey = _new_key(
            JoinKey,
            (
                share(workload, workload),
                batch,
                share(graph, graph),
                share(precision, precision),
                op if by_point else "",
                share(name, name),
                share(params, params),
                "",
            ),
        )
        if key in index:
            raise ReportError(
                source, _same_key(owners[key], test["id"], index[key][1], op, by_point)
            )
        owners[key] = test["id"]
        for pair in _words_of(test):
            words[pair] = None
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
            index[row_key] = (share(status, status), op, tuple(cells), tuple(values))
    header = {k: v for k, v in report.items() if k != "tests"}
    gate = gate_view(report, gate_metrics) if gate_metrics is not None else None
    found = tuple(sorted(words))
    return Digest(header, len(report["tests"]), index, fallback, gate, bench, windows, found)


def _metric_value(metrics: Mapping[str, Any], names: Sequence[str]) -> tuple[float | None, bool]:
    """The first available metric's value, and whether it was a fallback."""
    for i, name in enumerate(names):
        metric = metrics.get(name)
        if metric is not None and metric.get("value") is not None:
            return float(metric["value"]), i > 0
    return None, False


def compare_table(sources: Sequence[Source], *, join: Join = "point") -> Table:
    """The comparison table for ``sources`` (the first is the reference for ratios), every
    column (as CSV writes it)."""
    return digest_table([(s.name, digest(s.report, source=s.name, join=join)) for s in sources])


def digest_table(digests: Sequence[tuple[str, Digest]], *, join: Join = "point") -> Table:
    """:func:`compare_table` from ``(name, digest)`` pairs."""
    return _built(digests, join).table()


def compare_display(sources: Sequence[Source], *, join: Join = "point") -> list[Table]:
    """The comparison as text, Markdown and HTML show it (:meth:`TableBuilder.display`):
    per-item figures, then window figures; what every row shares in a header line, each
    parameter that tells rows apart its own short column."""
    digests = [(s.name, digest(s.report, source=s.name, join=join)) for s in sources]
    return [table for table, _ in _built(digests, join).display()]


def _built(digests: Sequence[tuple[str, Digest]], join: Join) -> TableBuilder:
    builder = TableBuilder(join=join)
    for name, report_digest in digests:
        builder.add(name, report_digest)
    return builder


class _Meta(NamedTuple):
    """What the table's notes say of one report."""

    name: str
    header: dict[str, Any]
    label: str
    n_tests: int
    fallback: bool
    words: tuple[tuple[str, str], ...]


class _Section(NamedTuple):
    """The rows of a displayed comparison that have per-item figures, or only window ones."""

    title: str
    columns: tuple[tuple[str, tuple[str, ...], float], ...]
    cells: slice
    values: slice


_SECTIONS = (
    _Section("Energy comparison", BENCH_COLUMNS, slice(0, 2 * _N_BENCH), slice(0, _N_BENCH)),
    _Section(
        "Energy comparison: windows",
        WINDOW_COLUMNS,
        slice(2 * _N_BENCH, None),
        slice(_N_BENCH, len(COMPARE_METRICS)),
    ),
)
_NO_BENCH = (None,) * _N_BENCH
_SHORT = {"latency p90 [ms]": "p90 [ms]"}
"""Shorter metric column names of the displayed tables (CSV keeps the long ones)."""
_KEY_COLUMNS = ["workload", "batch", "graph", "precision", "operating point", "params"]
_FIXED_NAMES = ("workload", "batch", "graph", "precision", "point", "window")
_WINDOW = _FIXED_NAMES.index("window")
_TIME_FRACTION = re.compile(r"\.\d+(?=Z|[+-]\d\d:?\d\d$|$)")

# A report's row, by key: status, point label, section (0 per item, 1 windows), then either
# the Markdown line of its section's metric cells (rendered ahead) or the row's first nine
# cells as CSV has them and its 18 metric and ratio cells.
_Row = tuple[Any, ...]


def _short_device(label: str) -> str:
    """A device label for a row: ``orin-nano`` for ``sim:orin-nano (simulated)`` (the
    notes say simulated)."""
    return label.removesuffix(" (simulated)").removeprefix("sim:")


def _describe(key: JoinKey) -> str:
    parts = [
        key.workload,
        f"batch {key.batch_size}" if key.batch_size is not None else "",
        key.graph_mode or "",
        key.precision or "",
        key.params.replace(",", " "),
        op_label(key.op) if key.op else "",
        f"[{key.window}]" if key.window else "",
    ]
    return " ".join(p for p in parts if p)


class TableBuilder:
    """The comparison table, one report at a time (the first added is the reference), so
    that a report's rows are made while later reports are still being read.

    With ``markdown``, the metric cells of each report's rows are rendered as Markdown at
    once and only the text kept; :meth:`table` then has no rows and :meth:`display` gives
    the Markdown lines.
    """

    def __init__(self, *, markdown: bool = False, join: Join = "point") -> None:
        self.join = join
        self.columns: list[str] = []
        self.cells = slice(None)
        self.spans: list[tuple[int, int]] = []
        self.metas: list[_Meta] = []
        self.reference: dict[JoinKey, _Entry] = {}
        self.rows: list[dict[JoinKey, _Row]] = []
        self.ahead = markdown
        self.numeric: list[list[bool]] = [
            [False] * 2 * len(section.columns) for section in _SECTIONS
        ]
        self.key_cells: dict[JoinKey, tuple[Any, ...]] = {}
        self.unjoined: list[str] = []
        self._points_of: dict[JoinKey, set[str]] | None = None

    def _choose_columns(self, first: Digest) -> None:
        """The metric columns of :meth:`table` (CSV): per item, windows or both, as the first
        report needs; and per section the metrics whose ratios rows need (those columns and
        the section's own)."""
        if first.windows and not first.bench:
            shown, self.cells, values = WINDOW_COLUMNS, _SECTIONS[1].cells, _SECTIONS[1].values
        elif first.windows:
            shown, self.cells, values = COMPARE_METRICS, slice(None), slice(0, len(COMPARE_METRICS))
        else:
            shown, self.cells, values = BENCH_COLUMNS, _SECTIONS[0].cells, _SECTIONS[0].values
        # Ratios are taken for CSV's metrics and the row's section's: one span either way.
        self.spans = [
            (min(values.start, s.values.start), max(values.stop, s.values.stop)) for s in _SECTIONS
        ]
        columns = [*_KEY_COLUMNS, "report", "device", "status"]
        for label, _, _ in shown:
            columns += [label, "ratio"]
        self.columns = columns

    @property
    def count(self) -> int:
        return len(self.metas)

    def add(self, name: str, new: Digest) -> None:
        first = not self.metas
        if first:
            self.reference = new.index
            self._choose_columns(new)
        number, label = f"#{len(self.metas) + 1}", new.label
        missing: list[JoinKey] = []
        if self.ahead:
            self.rows.append(self._markdown_ahead(new, missing))
        else:
            self.rows.append(self._rows(new, number, label, missing))
        if missing and not first:
            self.unjoined += self._unjoined(name, missing)
        self.metas.append(_Meta(name, new.header, label, new.n_tests, new.fallback, new.words))

    def _rows(
        self, new: Digest, number: str, label: str, missing: list[JoinKey]
    ) -> dict[JoinKey, _Row]:
        """:meth:`add`'s rows: per key (status, point, section, CSV's first nine cells, the
        18 metric and ratio cells); keys without a row of report #1 go to ``missing``."""
        reference = self.reference
        key_cells = self.key_cells
        spans = self.spans
        rows: dict[JoinKey, _Row] = {}
        for key, (status, op, cells, values) in new.index.items():
            section = 0 if values[:_N_BENCH] != _NO_BENCH else 1
            full = list(cells)
            found = reference.get(key)
            if found is not None:
                lo, hi = spans[section]
                full[2 * lo + 1 : 2 * hi : 2] = [
                    Ratio(value / ref) if value is not None and ref else None
                    for value, ref in zip(values[lo:hi], found[3][lo:hi], strict=True)
                ]
            else:
                missing.append(key)
            point = op_label(op)
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
                    params or None,
                )
            head = [*shared[:4], point, shared[4], number, label, status]
            rows[key] = (status, point, section, head, full)
        return rows

    def _markdown_ahead(self, new: Digest, missing: list[JoinKey]) -> dict[JoinKey, _Row]:
        """:meth:`add`'s rows rendered ahead: per key (status, point, section, the Markdown
        cells of the section's metrics and ratios)."""
        reference = self.reference
        groups: tuple[list[tuple[JoinKey, str, str]], ...] = ([], [])
        texts: tuple[list[list[Any]], ...] = ([], [])
        points: dict[str, str] = {}
        for key, (status, op, cells, values) in new.index.items():
            section = 0 if values[:_N_BENCH] != _NO_BENCH else 1
            shown = _SECTIONS[section]
            metric = list(cells[shown.cells])
            found = reference.get(key)
            if found is not None:
                part = shown.values
                metric[1::2] = [
                    Ratio(value / ref) if value is not None and ref else None
                    for value, ref in zip(values[part], found[3][part], strict=True)
                ]
            else:
                missing.append(key)
            point = points.get(op)
            if point is None:
                point = points[op] = op_label(op)
            groups[section].append((key, status, point))
            texts[section].append(metric)
        rows: dict[JoinKey, _Row] = {}
        for section, group in enumerate(groups):
            if not group:
                continue
            rendered = markdown_rows(texts[section], 2 * len(_SECTIONS[section].columns))
            for (key, status, point), line in zip(group, rendered.lines, strict=True):
                rows[key] = (status, point, section, line)
            self.numeric[section] = [
                a or b for a, b in zip(self.numeric[section], rendered.numeric, strict=True)
            ]
        return rows

    def _unjoined(self, name: str, missing: Sequence[JoinKey]) -> list[str]:
        """Why rows of report ``name`` found no row of report #1 to take a ratio to."""
        points_of = self._points_of
        if points_of is None and self.join == "point":
            points_of = self._points_of = {}
            for key in self.reference:
                points_of.setdefault(key._replace(op=""), set()).add(key.op)
        theirs: set[str] = set()
        own: set[str] = set()
        at_other_point = 0
        others: list[JoinKey] = []
        for key in missing:
            ops = points_of.get(key._replace(op="")) if points_of is not None else None
            if ops is None:
                others.append(key)
                continue
            at_other_point += 1
            theirs |= ops
            own.add(key.op)
        notes = []
        if at_other_point:
            asked = sorted(map(op_label, theirs - own or theirs))
            its = sorted(map(op_label, own))
            notes.append(
                f"{name} has no result at operating point {', '.join(asked)} of #1 (its "
                f"points: {', '.join(its)}): {counted(at_other_point, 'row')} without ratio; "
                "use --join workload to line up each board's own point"
            )
        if others:
            notes.append(
                f"{name}: {counted(len(others), 'row')} without ratio: test or parameters "
                f"not in #1 (e.g. {_describe(others[0])})"
            )
        return notes

    def _keys(self) -> list[JoinKey]:
        return sorted(set().union(*self.rows), key=JoinKey.sort_key)

    def _notes(self, *, ratios: bool = True) -> list[str]:
        metas = self.metas
        notes = []
        for i, meta in enumerate(metas):
            device = meta.header["device"]
            l4t = f", L4T {device['l4t']}" if device.get("l4t") else ""
            started = _TIME_FRACTION.sub("", str(meta.header["started_at"]))
            line = f"#{i + 1} {meta.name}: {meta.label}{l4t}, started {started}, "
            notes.append(line + counted(meta.n_tests, "test"))
            if meta.words:
                words = ", ".join(f"{word} = {value}" for word, value in meta.words)
                notes.append(f"#{i + 1} points: {words}")
        if ratios:
            if self.join == "workload":
                notes.append(
                    "ratio: value / value of report #1 for the same test and parameters, each "
                    "report at its own operating point (--join workload)"
                )
            else:
                notes.append("ratio: value / value of report #1 for the same key")
        notes.extend(self.unjoined)
        if any(meta.fallback for meta in metas):
            notes.append("* latency mean where latency p90 was not measured")
        notes.extend(version_notes([(meta.name, meta.header) for meta in metas]))
        if any("merged" in meta.header for meta in metas):
            from ..report.merge import spread_notes

            for i, meta in enumerate(metas):
                notes.extend(spread_notes(f"#{i + 1} {meta.name}", meta.header))
        return notes

    def table(self) -> Table:
        """The table with every column, as CSV writes it (rows by key, then report; no rows
        when rendering Markdown ahead)."""
        table = Table(list(self.columns), title="Energy comparison")
        if not self.ahead:
            out = table.rows
            part = self.cells
            for key in self._keys():
                for rows in self.rows:
                    row = rows.get(key)
                    if row is not None:
                        out.append(row[3] + row[4][part])
        table.notes = self._notes()
        return table

    def display(self) -> list[tuple[Table, MarkdownRows | None]]:
        """The comparison as text, Markdown and HTML show it: a table of the rows with
        per-item figures, then one of the rows with window figures only, each with its own
        metric columns; with Markdown lines when built with ``markdown``.

        Key columns: the point and each parameter, one that holds one value on every row in
        a header line instead, one empty on every row left out, and a parameter that tells
        no rows apart (it follows from the columns shown) said in a note; the device beside
        the report number when devices differ; no ratio columns for one report. The notes
        go with the last table."""
        keys = self._keys()
        ratios = len(self.metas) > 1
        labels = {meta.label for meta in self.metas}
        reports = [
            f"#{i + 1} {_short_device(meta.label)}" if len(labels) > 1 else f"#{i + 1}"
            for i, meta in enumerate(self.metas)
        ]
        ordered: tuple[list[tuple[JoinKey, int, _Row]], ...] = ([], [])
        for key in keys:
            for i, rows in enumerate(self.rows):
                row = rows.get(key)
                if row is not None:
                    ordered[row[2]].append((key, i, row))
        shown = [s for s in range(len(_SECTIONS)) if ordered[s]] or [0]
        out: list[tuple[Table, MarkdownRows | None]] = []
        for s in shown:
            title = _SECTIONS[s].title if len(shown) > 1 else _SECTIONS[0].title
            out.append(self._section(s, ordered[s], title, reports, ratios))
        out[-1][0].notes.extend(self._notes(ratios=ratios))
        return out

    def _section(
        self,
        s: int,
        rows: Sequence[tuple[JoinKey, int, _Row]],
        title: str,
        reports: Sequence[str],
        ratios: bool,
    ) -> tuple[Table, MarkdownRows | None]:
        section = _SECTIONS[s]
        statuses = {row[0] for _, _, row in rows}
        combos: list[tuple[JoinKey, str]] = []
        by_report = ""  # joined by workload, one point per report: said once, no column
        if self.join == "point":  # the point is the key's; a key's rows are adjacent
            last = None
            for key, _, row in rows:
                if key is not last:
                    combos.append((key, row[1]))
                    last = key
        else:
            points: dict[int, set[str]] = {}
            for _, i, row in rows:
                points.setdefault(i, set()).add(row[1])
            if all(len(p) == 1 for p in points.values()) and len(set().union(*points.values())) > 1:
                by_report = "point per report: " + ", ".join(
                    f"#{i + 1} {point}" for i, (point,) in sorted(points.items())
                )
            combos = list(dict.fromkeys((key, "" if by_report else row[1]) for key, _, row in rows))
        layout = _Layout(combos, keep_one=not ratios)
        items = list(layout.shared)
        show_status = len(statuses) > 1
        if len(statuses) == 1:
            items.append(f"status {next(iter(statuses))}")
        metric_columns: list[str] = []
        for label, _, _ in section.columns:
            label = _SHORT.get(label, label)
            metric_columns += [label, "ratio"] if ratios else [label]
        columns = list(layout.columns)
        if ratios:
            columns.append("report")
        if show_status:
            columns.append("status")
        n_head = len(columns)
        header = [by_report] if by_report else []
        table = Table(columns + metric_columns, title=title, header=header + shared_lines(items))
        table.notes.extend(layout.notes)
        cells_of = layout.cells
        if not self.ahead:
            part = section.cells
            for key, i, row in rows:
                head = list(cells_of[(key, "" if by_report else row[1])])
                if ratios:
                    head.append(reports[i])
                if show_status:
                    head.append(row[0])
                metric = row[4][part]
                table.rows.append(head + (metric if ratios else metric[0::2]))
            return table, None
        return table, self._markdown(s, rows, layout, reports, n_head, by_report, show_status)

    def _markdown(
        self,
        s: int,
        rows: Sequence[tuple[JoinKey, int, _Row]],
        layout: _Layout,
        reports: Sequence[str],
        n_head: int,
        by_report: str,
        show_status: bool,
    ) -> MarkdownRows:
        """:meth:`_section`'s Markdown lines: the metric cells rendered ahead (by :meth:`add`)
        after the key cells; for one report, its cells again without ratio columns."""
        section = _SECTIONS[s]
        ratios = len(self.metas) > 1
        prefixes = {
            combo: " | ".join(_md_text(c) for c in cells) for combo, cells in layout.cells.items()
        }
        numeric = layout.numeric + [False] * (n_head - len(layout.columns))
        metric_lines: Iterator[str] = iter(())
        if not ratios:  # the one report's cells again, without ratio columns
            entries = self.reference
            rendered = markdown_rows(
                [list(entries[key][2][section.cells][0::2]) for key, _, _ in rows],
                len(section.columns),
            )
            numeric += rendered.numeric
            metric_lines = iter(rendered.lines)
        else:
            numeric += self.numeric[s]
        lines = []
        keyed = bool(layout.columns)
        tails = [f" | {r}" for r in reports] if ratios else [""] * len(reports)
        seen: tuple[JoinKey | None, str] = (None, "")
        prefix = ""
        for key, i, row in rows:
            op = "" if by_report else row[1]
            if keyed and (key is not seen[0] or op != seen[1]):
                prefix, seen = prefixes[(key, op)], (key, op)
            head = prefix + tails[i] + (f" | {_md_text(row[0])}" if show_status else "")
            if not keyed:
                head = head[3:]  # no key column: no separator before the report
            metric_line = row[3] if ratios else next(metric_lines)
            lines.append(f"| {head} {metric_line}" if head else metric_line)
        return MarkdownRows(lines, numeric)


def _md_text(value: Any) -> str:
    text = cell_text(value)
    return text.replace("|", "\\|").replace("\n", " ") if "|" in text or "\n" in text else text


class _Layout:
    """The key columns of a displayed comparison whose rows are ``combos`` (key, point
    label). A column (workload, batch, graph, precision, point, window, each parameter)
    holding one value on every row goes to :attr:`shared` (``name value``) and one empty on
    every row is left out. Of the others, a parameter that tells no rows apart that the
    columns before it do not (it follows from them: ``model_params`` from the workload) is
    left out too, named in :attr:`notes`. With ``keep_one`` (no report column tells rows
    apart) at least one column stays, the workload."""

    def __init__(self, combos: Sequence[tuple[JoinKey, str]], *, keep_one: bool = True) -> None:
        names: dict[str, None] = {}
        for key in dict.fromkeys(k for k, _ in combos):
            names.update(dict.fromkeys(name for name, _ in split_params(key.params)))
        params = sorted(names)
        table: dict[tuple[JoinKey, str], list[Any]] = {}
        for key, op in combos:
            given = dict(split_params(key.params))
            table[(key, op)] = [
                key.workload,
                key.batch_size,
                graph_shown(key.graph_mode, given.get("runtime")),
                key.precision,
                op or None,
                key.window or None,
                *(given.get(name) for name in params),
            ]
        column_names = [*_FIXED_NAMES, *params]
        n_fixed = len(_FIXED_NAMES)
        rows = list(table.values())
        shown: list[int] = []
        hidden: list[str] = []
        self.shared: list[str] = []
        groups = 1
        for i, name in enumerate(column_names):
            values = {row[i] for row in rows}
            if values <= {None}:
                continue
            if len(values) == 1:
                value = next(iter(values))
                item = f"{name} {cell_text(value)}" if i < n_fixed else f"{name}={value}"
                self.shared.append(item)
                continue
            if i >= n_fixed:
                split = len({tuple(row[j] for j in [*shown, i]) for row in rows})
                if split == groups:
                    hidden.append(name)
                    continue
            shown.append(i)
            groups = len({tuple(row[j] for j in shown) for row in rows})
        if not shown and rows and keep_one:
            shown = [0]
            self.shared = self.shared[1:]
        shown.sort(key=lambda i: (i == _WINDOW, i))  # the window label last
        self.columns = [column_names[i] for i in shown]
        self.cells = {combo: [row[i] for i in shown] for combo, row in table.items()}
        self.numeric = [
            any(isinstance(row[i], int) and not isinstance(row[i], bool) for row in rows)
            for i in shown
        ]
        self.notes = (
            [f"in CSV only (each follows from the columns shown): {', '.join(hidden)}"]
            if hidden
            else []
        )


# ---------------------------------------------------------------------------------------
# reading many reports


def _digest_path(path: Path, gate_metrics: GateNeeds | None, join: Join = "point") -> Digest:
    report = load_report(path)
    require_tests(report, path)
    return digest(report, gate_metrics, source=str(path), join=join)


def digest_stream(
    paths: Sequence[Path],
    gate_metrics: GateNeeds | None = None,
    *,
    workers: int | None = None,
    join: Join = "point",
) -> Iterator[tuple[str, Digest]]:
    """``(str(path), digest)`` of reports that must each hold tests, in ``paths`` order,
    read by forked workers besides this process when there is much to read (``workers``:
    how many; default from the CPUs and the sizes, see :func:`.parallel.workers_for`);
    ``join``: see :data:`JOINS`.

    Raises the :class:`~.load.ReportError` of the first bad file in ``paths`` order, as
    reading them one by one would (reports before it are yielded first).
    """
    count = workers_for(paths) if workers is None else workers
    func = functools.partial(_digest_path, gate_metrics=gate_metrics, join=join)
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


def render_plots(sources: Sequence[Source], out_dir: Path) -> Rendered:
    from pytest_edgeenergy.present.plots import render_all
    from pytest_edgeenergy.report.load import frame_from_rows

    return render_all(frame_from_rows(compare_frame_rows(sources)), out_dir)


def html_page(
    tables: Sequence[Table], verdicts: Sequence[GateVerdict], sources: Sequence[Source]
) -> str:
    body = [render_html_table(table) for table in tables]
    body += [render_verdict(v, "html") for v in verdicts]
    with tempfile.TemporaryDirectory(prefix="edgeenergy-plots-") as tmp:
        rendered = render_plots(sources, Path(tmp))
        for png in rendered:
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            body.append(f'<img alt="{png.stem}" src="data:image/png;base64,{data}">')
        body += [f"<p>no plot: {html.escape(str(note))}</p>" for note in rendered.notes]
    return html_document("pytest-edgeenergy comparison", "\n".join(body) + "\n")
