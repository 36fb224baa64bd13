"""The fleet page (``edgeenergy history html``): one self-contained static HTML file.

Per board x test x operating point, the trend of a metric over the runs (a matplotlib figure
inlined as SVG) with its change points marked (:func:`.changes.find_changes`, as ``history
changes`` finds them) and the commits at each change; a cross-device table of each board's
latest run; filters by board, suite (test file) and operating point in a few lines of plain
JavaScript that keep their state in the URL's fragment (``#board=FP&suite=FILE&point=OP``),
so a filtered view is a link. No network is needed to view it.

A page holds at most ``max_series`` series (:data:`DEFAULT_MAX_SERIES`; each figure takes a
fraction of a second and about 20 KB): the series with changes first, the most recent
regression first (:func:`ranked`); the page and the command say how many were left out.

Hooks for tests and scripts: each trend is a ``<figure class="series">`` with ``data-device``
(fingerprint), ``data-suite``, ``data-point``, ``data-test``, ``data-metric`` and
``data-changes`` (how many); each change marker in its SVG is a group whose id starts with
``change-``. matplotlib is imported inside the functions (only the CLI reaches this module).
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import pairwise
from statistics import median
from typing import TYPE_CHECKING

from pytest_edgeenergy.extras import require
from pytest_edgeenergy.words import counted, visible

if TYPE_CHECKING:
    from pytest_edgeenergy.history.changes import ChangePoint
    from pytest_edgeenergy.history.store import HistoryStore, Series

DEFAULT_METRIC = "energy_per_item"
DEFAULT_MAX_SERIES = 50
"""Series drawn on a page unless asked otherwise (about 10 s and 1 MB of figures)."""
FALLBACK_METRIC = "energy_j"
"""Where a series has no ``energy_per_item`` (the ``energy`` fixture's windows), ``energy_j``."""


@dataclass(frozen=True)
class Trend:
    """One series on the page with the changes found in it."""

    series: Series
    changes: tuple[ChangePoint, ...]

    @property
    def suite(self) -> str:
        return suite_of(self.series.test)


Progress = Callable[[str, int, int], None]
"""Told ``(what, done, total)`` as long work goes on: ``("finding changes", 10, 400)``."""


@dataclass(frozen=True)
class FleetPage:
    """The page's HTML and what it holds (series drawn, their changes and boards) out of
    the ``found`` series that matched."""

    html: str
    series: int
    changes: int
    boards: int
    found: int = 0

    @property
    def left_out(self) -> int:
        """Series that matched but are not drawn (over ``max_series``)."""
        return self.found - self.series


def suite_of(test_id: str) -> str:
    """The test file of a test id: ``suites/test_infer.py`` of ``suites/test_infer.py::t[a]``."""
    return test_id.partition("::")[0]


def trends(
    store: HistoryStore,
    *,
    metric: str = DEFAULT_METRIC,
    test: str | None = None,
    since: datetime | None = None,
    branch: str | None = None,
    min_size: int = 3,
    alpha: float = 0.05,
    progress: Progress | None = None,
) -> list[Trend]:
    """Every series of ``metric`` (the default falls back to ``energy_j`` for a test
    without ``energy_per_item``) with its changes, in board, test, point order."""
    from pytest_edgeenergy.history.changes import find_changes

    chosen = store.series(metric=metric, test=test, since=since, branch=branch)
    if metric == DEFAULT_METRIC:
        have = {(s.device, s.point, s.test) for s in chosen}
        chosen += [
            s
            for s in store.series(metric=FALLBACK_METRIC, test=test, since=since, branch=branch)
            if (s.device, s.point, s.test) not in have
        ]
    chosen.sort(key=lambda s: (s.device_label, s.device, s.test, s.point))
    out = []
    for i, s in enumerate(chosen):
        values = [p.value for p in s.points]  # too short for a change: none
        out.append(Trend(s, tuple(find_changes(values, min_size=min_size, alpha=alpha))))
        if progress is not None:
            progress("finding changes", i + 1, len(chosen))
    return out


def ranked(found: Sequence[Trend]) -> list[Trend]:
    """``found`` in the order a page with room for fewer keeps them: series with a change
    first, those whose latest change is a regression before the others, each by the time
    of that change, newest first; then the series without a change, newest run first."""
    from pytest_edgeenergy.report.metric_names import higher_is_better

    def key(t: Trend) -> tuple[int, float]:
        s = t.series
        if not t.changes:
            return (2, -s.points[-1].started_at.timestamp())
        last = t.changes[-1]
        worse = (last.rel_change > 0) != higher_is_better(s.metric)
        return (0 if worse else 1, -s.points[last.index].started_at.timestamp())

    return sorted(found, key=key)


def render_page(
    store: HistoryStore,
    *,
    metric: str = DEFAULT_METRIC,
    test: str | None = None,
    since: datetime | None = None,
    branch: str | None = None,
) -> str:
    """The fleet page of ``store`` as one self-contained HTML document."""
    return fleet_page(store, metric=metric, test=test, since=since, branch=branch).html


def fleet_page(
    store: HistoryStore,
    *,
    metric: str = DEFAULT_METRIC,
    test: str | None = None,
    since: datetime | None = None,
    branch: str | None = None,
    min_size: int = 3,
    alpha: float = 0.05,
    max_series: int | None = DEFAULT_MAX_SERIES,
    progress: Progress | None = None,
) -> FleetPage:
    """The page with its counts (series, changes, boards); at most ``max_series`` series
    drawn (None: every one), chosen by :func:`ranked`."""
    require("matplotlib", "analysis", "the fleet page (edgeenergy history html)")
    every = trends(
        store, metric=metric, test=test, since=since, branch=branch,
        min_size=min_size, alpha=alpha, progress=progress,
    )  # fmt: skip
    found = every
    if max_series is not None and len(every) > max_series:
        kept = {id(t) for t in ranked(every)[:max_series]}
        found = [t for t in every if id(t) in kept]  # in the page's order
    boards = {t.series.device for t in found}
    filters = []
    if test:
        filters.append(f"tests {test}")
    if since:
        filters.append(f"runs since {since.isoformat(timespec='minutes')}")
    if branch:
        filters.append(f"branch {branch}")
    body = [
        _summary(store.name, metric, found, len(boards), filters),
        _left_out(every, found, max_series),
        _filters(found),
        _latest_table(found),
        _trend_sections(found, progress),
    ]
    page = _document(f"Energy history: {metric}", "\n".join(body))
    changes = sum(len(t.changes) for t in found)
    return FleetPage(page, len(found), changes, len(boards), len(every))


# -- parts of the page ---------------------------------------------------------------------


def _e(text: object) -> str:
    """Text for the page: escaped, and its invisible characters (a bidi override that
    would show a test id reversed, a zero-width space) shown as ``<U+202E>``."""
    return html.escape(visible(str(text)), quote=True)


def _short(commit: str | None) -> str:
    return commit[:10] if commit else "?"


def _time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _board(label: str) -> str:
    """A board's name; a virtual board's says so in a badge."""
    name = label.removesuffix(" (simulated)")
    badge = ' <span class="sim">simulated</span>' if name != label else ""
    return f"{_e(name)}{badge}"


def _value(value: float) -> str:
    return f"{value:.4g}"


def _summary(db: str, metric: str, found: Sequence[Trend], boards: int, filters: list[str]) -> str:
    changes = sum(len(t.changes) for t in found)
    made = datetime.now(timezone.utc)
    where = f" ({_e('; '.join(filters))})" if filters else ""
    fallback = sum(1 for t in found if t.series.metric != metric)
    note = (
        f" {fallback} series without {_e(metric)} show {_e(FALLBACK_METRIC)}." if fallback else ""
    )
    return (
        f'<p class="summary">From {_e(db)}{where}, made {_e(_time(made))}: '
        f'<span id="counts" data-series="{len(found)}" data-changes="{changes}" '
        f'data-boards="{boards}">{len(found)} series, {counted(changes, "change")}, '
        f"{counted(boards, 'board')}"
        f"</span>.{note} Changes are found as by <code>edgeenergy history changes</code>; "
        "commits: the last run before a change .. the first run after it.</p>"
    )


def _left_out(every: Sequence[Trend], found: Sequence[Trend], max_series: int | None) -> str:
    """The note saying how many series matched but are not drawn, and how to see them."""
    missing = len(every) - len(found)
    if not missing:
        return ""
    changes = sum(len(t.changes) for t in every) - sum(len(t.changes) for t in found)
    return (
        f'<p class="note" id="left-out" data-left-out="{missing}">{missing} of {len(every)} '
        f"series are not drawn ({changes} changes in them): this page holds {max_series}, "
        "the series with changes first, the most recent regression first. Narrow it with "
        "<code>--test</code>, <code>--since</code> or <code>--branch</code>, or draw more "
        "with <code>--max-series N</code> (<code>0</code>: every one).</p>"
    )


def _options(name: str, label: str, values: Sequence[tuple[str, str]]) -> str:
    opts = [f'<option value="">every {_e(label)}</option>']
    opts += [f'<option value="{_e(v)}">{_e(text)}</option>' for v, text in values]
    return (
        f'<label>{_e(label)} <select id="f-{name}" data-filter="{name}">'
        + "".join(opts)
        + "</select></label>"
    )


def _filters(found: Sequence[Trend]) -> str:
    boards = sorted({(t.series.device, t.series.device_label) for t in found}, key=lambda b: b[1])
    suites = sorted({t.suite for t in found})
    points = sorted({t.series.point for t in found})
    return (
        '<form class="filters" id="filters">'
        + _options("board", "board", [(fp, f"{label} [{fp}]") for fp, label in boards])
        + _options("suite", "suite", [(s, s) for s in suites])
        + _options("point", "operating point", [(p, p) for p in points])
        + ' <span id="shown" data-shown="'
        + str(len(found))
        + f'">{len(found)} of {len(found)} series shown</span></form>'
    )


def _latest_table(found: Sequence[Trend]) -> str:
    """Rows: test x operating point; columns: each board's latest run (time, commit)."""
    if not found:
        return "<p>No series in the history match.</p>"
    latest: dict[str, tuple[datetime, str, str | None]] = {}
    labels: dict[str, str] = {}
    cells: dict[tuple[str, str, str], dict[str, float]] = {}
    units: dict[tuple[str, str, str], str] = {}
    for t in found:
        s = t.series
        labels[s.device] = s.device_label
        newest = s.points[-1]
        known = latest.get(s.device)
        if known is None or (newest.started_at, newest.run_id) > known[:2]:
            latest[s.device] = (newest.started_at, newest.run_id, newest.commit)
    for t in found:
        s = t.series
        run_id = latest[s.device][1]
        row = (s.test, s.point, s.metric)
        units[row] = s.unit or ""
        for p in reversed(s.points):
            if p.run_id == run_id:
                cells.setdefault(row, {})[s.device] = p.value
                break
        else:
            cells.setdefault(row, {})
    order = sorted(latest, key=lambda d: (labels[d], d))

    out = [
        '<h2>Latest run per board</h2><div class="scroll"><table id="latest">',
        "<thead><tr><th>test</th><th>operating point</th><th>metric</th>"
        + "".join(f'<th data-device="{_e(d)}">{_board(labels[d])}</th>' for d in order)
        + "</tr>",
        '<tr><th colspan="3">latest run</th>'
        + "".join(f'<td data-device="{_e(d)}">{_e(_time(latest[d][0]))}</td>' for d in order)
        + "</tr>",
        '<tr><th colspan="3">commit</th>'
        + "".join(
            f'<td data-device="{_e(d)}"><code>{_e(_short(latest[d][2]))}</code></td>' for d in order
        )
        + "</tr></thead><tbody>",
    ]
    for (test, point, metric), values in sorted(cells.items()):
        unit = units[(test, point, metric)]
        metric_text = f"{metric} [{unit}]" if unit else metric
        out.append(
            f'<tr data-suite="{_e(suite_of(test))}" data-point="{_e(point)}">'
            f"<td>{_e(test)}</td><td>{_e(point)}</td><td>{_e(metric_text)}</td>"
            + "".join(
                f'<td class="num" data-device="{_e(d)}">'
                + (_e(_value(values[d])) if d in values else "&mdash;")
                + "</td>"
                for d in order
            )
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def _trend_sections(found: Sequence[Trend], progress: Progress | None = None) -> str:
    out = ["<h2>Trends</h2>"]
    device: str | None = None
    for i, t in enumerate(found):
        s = t.series
        if s.device != device:
            if device is not None:
                out.append("</section>")
            device = s.device
            out.append(
                f'<section class="board" data-device="{_e(device)}">'
                f"<h3>{_board(s.device_label)} <small>[{_e(device)}]</small></h3>"
            )
        out.append(_figure(i, t))
        if progress is not None:
            progress("drawing", i + 1, len(found))
    if device is not None:
        out.append("</section>")
    return "\n".join(out)


def _figure(index: int, trend: Trend) -> str:
    s = trend.series
    unit = f" [{s.unit}]" if s.unit else ""
    items = []
    for c in trend.changes:
        before, first = s.points[c.index - 1], s.points[c.index]
        items.append(
            f'<li class="change">from {_e(_time(first.started_at))}, commits '
            f"<code>{_e(_short(before.commit))}..{_e(_short(first.commit))}</code>: "
            f"{_e(_value(c.before))} &rarr; {_e(_value(c.after))}{_e(unit)} "
            f"({100.0 * c.rel_change:+.1f} %, p = {c.p_value:.3g})</li>"
        )
    changes = f"<ul>{''.join(items)}</ul>" if items else ""
    if any(c.autocorrelated for c in trend.changes):
        from pytest_edgeenergy.history.changes import AUTOCORRELATED

        r = trend.changes[0].autocorrelation
        changes += f'<p class="autocorrelated">Note: {_e(AUTOCORRELATED)} (r = {r:.2f}).</p>'
    return (
        f'<figure class="series" id="series-{index}" data-device="{_e(s.device)}" '
        f'data-suite="{_e(trend.suite)}" data-point="{_e(s.point)}" data-test="{_e(s.test)}" '
        f'data-metric="{_e(s.metric)}" data-changes="{len(trend.changes)}">'
        f"{_svg(index, trend)}<figcaption><b>{_e(s.test)}</b> at {_e(s.point)}: "
        f"{_e(s.metric)}{_e(unit)} over {counted(len(s.points), 'run')}, "
        f"{counted(len(trend.changes), 'change')}"
        f"{changes}</figcaption></figure>"
    )


def _svg(index: int, trend: Trend) -> str:
    """The trend as an inline SVG: each point a run, each change a dashed line whose group
    id is ``change-INDEX-K``, the level (median) of each stretch between changes in grey."""
    import matplotlib
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
    from matplotlib.figure import Figure

    s = trend.series
    # matplotlib's date numbers (days); date2num has no annotations
    times = [float(date2num(p.started_at)) for p in s.points]  # type: ignore[no-untyped-call]
    values = [p.value for p in s.points]
    # Text stays text (no glyph definitions repeated in every figure); a salt per figure
    # keeps the clip-path ids of the figures on one page distinct and the output stable.
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": f"series-{index}", "font.size": 9}
    ):
        # Fixed margins: a constrained layout lays every figure out twice (half its time).
        fig = Figure(figsize=(7.0, 2.6))
        fig.subplots_adjust(left=0.13, right=0.98, bottom=0.2, top=0.95)
        ax = fig.add_subplot()
        many = len(values) > 200
        ax.plot(times, values, "-" if many else "-o", color="#1f77b4", lw=1, ms=3)
        bounds = [0, *(c.index for c in trend.changes), len(values)]
        for lo, hi in pairwise(bounds):
            level = median(values[lo:hi])  # the levels the captions give
            ax.hlines(level, times[lo], times[hi - 1], color="#7f7f7f", lw=1.5, alpha=0.8)
        for k, c in enumerate(trend.changes):
            at = times[c.index - 1] + (times[c.index] - times[c.index - 1]) / 2
            ax.axvline(at, color="#d62728", ls="--", lw=1.2, gid=f"change-{index}-{k}")
            ax.annotate(
                f"{100.0 * c.rel_change:+.1f} %",
                (at, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(3, -10),
                textcoords="offset points",
                color="#d62728",
            )
        ax.xaxis_date(tz="UTC")
        locator = AutoDateLocator(tz=timezone.utc)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        concise = ConciseDateFormatter(locator, tz=timezone.utc)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_formatter(concise)
        ax.set_ylabel(visible(f"{s.metric} [{s.unit}]" if s.unit else s.metric))
        ax.grid(alpha=0.3)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return _scoped(text[text.index("<svg") :], f"s{index}-")


_SVG_ID = re.compile(r'(\bid="|href="#|url\(#)(?!change-)')


def _scoped(svg: str, prefix: str) -> str:
    """``svg`` with its ids (and the references to them) prefixed, the change markers' left
    as they are: matplotlib names the parts of every figure alike (``figure_1``...), and ids
    must be unique in the page."""
    return _SVG_ID.sub(lambda m: m.group(1) + prefix, svg)


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.5em}h3{font-size:1.05em}
.filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd}
.filters label{margin-right:1em}
.sim{background:#fff3cd;border:1px solid #e0c060;border-radius:3px;padding:0 .3em;
font-size:.8em}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure.series{margin:1em 0;max-width:760px}
figure.series svg{width:100%;height:auto}
figcaption{font-size:.85em}figcaption ul{margin:.2em 0}
.note{background:#fff3cd;border:1px solid #e0c060;padding:.4em .6em}
[hidden]{display:none!important}
"""

_SCRIPT = """
(function () {
  "use strict";
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var figures = Array.prototype.slice.call(document.querySelectorAll("figure.series"));
  var keys = {board: "device", suite: "suite", point: "point"};
  function chosen() {
    var out = {};
    selects.forEach(function (s) { out[s.dataset.filter] = s.value; });
    return out;
  }
  function matches(el, want, names) {
    return names.every(function (name) {
      var v = want[name];
      return !v || el.dataset[keys[name]] === v;
    });
  }
  function apply() {
    var want = chosen();
    var shown = 0;
    figures.forEach(function (f) {
      var ok = matches(f, want, ["board", "suite", "point"]);
      f.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.querySelectorAll("section.board").forEach(function (s) {
      s.hidden = !s.querySelector("figure.series:not([hidden])");
    });
    document.querySelectorAll("#latest [data-device]").forEach(function (c) {
      c.hidden = !!want.board && c.dataset.device !== want.board;
    });
    document.querySelectorAll("#latest tbody tr").forEach(function (r) {
      r.hidden = !matches(r, want, ["suite", "point"]);
    });
    var out = document.getElementById("shown");
    out.dataset.shown = String(shown);
    out.textContent = shown + " of " + figures.length + " series shown";
  }
  function fromHash() {
    var params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    selects.forEach(function (s) {
      var v = params.get(s.dataset.filter) || "";
      var known = Array.prototype.some.call(s.options, function (o) { return o.value === v; });
      s.value = known ? v : "";
    });
    apply();
  }
  function toHash() {
    var params = new URLSearchParams();
    var want = chosen();
    Object.keys(want).forEach(function (k) { if (want[k]) { params.set(k, want[k]); } });
    var text = params.toString();
    window.history.replaceState(null, "", text ? "#" + text : window.location.pathname);
    apply();
  }
  selects.forEach(function (s) { s.addEventListener("change", toHash); });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
"""


def _document(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        f"<h1>{_e(title)}</h1>\n{body}\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )
