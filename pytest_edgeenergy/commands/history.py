"""``edgeenergy history``: the energy history's commands: ``add`` reports, ``gate`` a report
against the history of its device, list ``changes`` over every series, write the fleet
page (``html``), ``export`` a run for Bencher or github-action-benchmark, ``init`` an empty
history (only ``add`` and ``init`` create one).

Exit codes as the rest of ``edgeenergy``: 0 done (a gate passed), 1 a gate failed, 2 bad
input (a report that cannot be read, a database that cannot be opened, a bad expression),
with one ``edgeenergy: <message>`` line each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_edgeenergy.errors import EdgeEnergyError
from pytest_edgeenergy.extras import require
from pytest_edgeenergy.history.errors import HistoryError
from pytest_edgeenergy.history.page import DEFAULT_MAX_SERIES, DEFAULT_METRIC
from pytest_edgeenergy.ranges import FloatRange, IntRange
from pytest_edgeenergy.verdict.history import DEFAULT_WINDOW
from pytest_edgeenergy.words import counted

if TYPE_CHECKING:
    from pytest_edgeenergy.history.store import HistoryStore

WINDOW_RUNS = IntRange(1, 1000, "runs")
"""``gate --window``: how many earlier runs of the device the gate reads."""
MIN_SIZE = IntRange(2, 1000, "runs")
MAX_SERIES = IntRange(0, 1_000_000, "series")
"""``html --max-series``: series drawn on the page (0: every one)."""
ALPHA = FloatRange(0.0, 0.5, "", above_low=True)

DB_HELP = (
    "the history database: a file path or sqlite:///PATH (SQLite), or postgresql://USER:"
    "PASSWORD@HOST/DB (PostgreSQL); default $EDGEENERGY_DB, else reports/energy.db"
)

TEST_HELP = (
    "a test id, or a pattern with * (any text) and ? (one character); brackets match "
    "themselves, as in every parametrized id: '*test_x[*]'"
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="edgeenergy history",
        description="Keep every run's results in a database (SQLite or PostgreSQL).",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add = sub.add_parser(
        "add",
        help="store every result of reports (adding a report twice changes nothing)",
        description="Store every result of each report; a run already there is left as is.",
    )
    add.add_argument(
        "reports",
        nargs="+",
        type=Path,
        metavar="REPORT",
        help="a report written by pytest-edgeenergy (schema 1 or 2)",
    )
    add.add_argument("--db", metavar="URL_OR_PATH", help=DB_HELP)
    add.add_argument(
        "--branch",
        metavar="NAME",
        help="the git branch to record with the runs (reports carry the commit only)",
    )
    add.add_argument(
        "--unfinished",
        action="store_true",
        help="also add reports of runs that did not finish (an interrupted run); "
        "refused otherwise, as their later results could never be added",
    )
    gate = sub.add_parser(
        "gate",
        help="gate a report against the last N runs of its device in the history",
        description="Gate REPORT against the newest --window runs of the same device "
        "(fingerprint) in the history, on --branch when given: the verdict table and exit "
        "codes of `edgeenergy compare --fail` (0 passed, 1 failed, 2 bad input).",
    )
    gate.add_argument("report", type=Path, metavar="REPORT", help="the new run's report")
    gate.add_argument(
        "--fail",
        action="append",
        required=True,
        metavar="EXPR",
        help="gate expression as in compare, e.g. 'mean:energy_j:5%%' (repeatable)",
    )
    gate.add_argument(
        "--window",
        type=WINDOW_RUNS,
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"earlier runs of the device to read (default {DEFAULT_WINDOW}); "
        f"{WINDOW_RUNS.describe()}",
    )
    gate.add_argument("--branch", metavar="NAME", help="only runs recorded on this branch")
    gate.add_argument(
        "--fail-insufficient",
        action="store_true",
        help="strict gate: a result too thinly measured to judge fails it too",
    )
    gate.add_argument("--format", choices=("table", "markdown"), default="table")
    gate.add_argument("--db", metavar="URL_OR_PATH", help=DB_HELP)

    changes = sub.add_parser(
        "changes",
        help="change points over every series (device x operating point x test x metric)",
        description="Find changes of level in every series of the history: each with the "
        "run where the new level starts, the commits between the last run before and that "
        "run, the size and the p-value (see the manual: how changes are found).",
    )
    changes.add_argument("--since", type=_date, metavar="DATE", help="runs from DATE (ISO)")
    changes.add_argument("--test", metavar="PATTERN", help=TEST_HELP)
    changes.add_argument("--metric", metavar="NAME", help="one metric (default: every one)")
    changes.add_argument("--branch", metavar="NAME", help="only runs recorded on this branch")
    changes.add_argument(
        "--min-size",
        type=MIN_SIZE,
        default=3,
        metavar="N",
        help=f"runs on each side of a change (default 3); {MIN_SIZE.describe()}",
    )
    changes.add_argument(
        "--alpha",
        type=ALPHA,
        default=0.05,
        metavar="P",
        help=f"significance of each change (default 0.05); {ALPHA.describe()}",
    )
    changes.add_argument("--json", action="store_true", help="machine-readable output")
    changes.add_argument("--db", metavar="URL_OR_PATH", help=DB_HELP)
    _export_parser(sub)
    _html_parser(sub)
    init = sub.add_parser(
        "init",
        help="create the history, empty, unless it is there (only add and init create one)",
        description="Create the history database, empty (its file, its directory and its "
        "tables), unless it is there, which changes nothing. What only reads the history "
        "(gate, changes, html, export, pytest's --edge-history) never creates one: a CI job "
        "whose first run has no history yet creates it here, explicitly.",
    )
    init.add_argument("--db", metavar="URL_OR_PATH", help=DB_HELP)
    return p


def _export_parser(sub: Any) -> None:
    export = sub.add_parser(
        "export",
        help="one run as Bencher Metric Format or github-action-benchmark JSON",
        description="Export a run for a dashboard: the report file given with --report (no "
        "database needed), the run --run RUN_ID of the history, else the newest run of "
        "each device in the history. Benchmarks are named 'TEST_ID | DEVICE | POINT'.",
    )
    export.add_argument(
        "--format", required=True, metavar="FORMAT",
        help="bencher (Bencher Metric Format) or github-action-benchmark "
        "(customSmallerIsBetter; bigger-is-better metrics such as throughput left out)",
    )  # fmt: skip
    which = export.add_mutually_exclusive_group()
    which.add_argument("--report", type=Path, metavar="PATH", help="a report file to export")
    which.add_argument("--run", metavar="RUN_ID", help="a run of the history to export")
    export.add_argument(
        "--metric", nargs="+", action="extend", metavar="NAME",
        help="metrics to export (default: energy_per_item, energy_j, latency_p90, throughput)",
    )  # fmt: skip
    export.add_argument("-o", "--output", type=Path, metavar="OUT", help="write to OUT")
    export.add_argument("--db", metavar="URL_OR_PATH", help=DB_HELP)


def _date(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date; use ISO 8601, e.g. 2026-11-01 or 2026-11-01T12:00"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def history_main(argv: Sequence[str]) -> int:
    """Entry point of ``edgeenergy history``; returns the exit status."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:  # argparse printed the usage and the error
        return exc.code if isinstance(exc.code, int) else 2
    if args.command == "add":
        return _add(args)
    if args.command == "gate":
        return _guarded(_gate, args)
    if args.command == "changes":
        return _guarded(_changes, args)
    if args.command == "export":
        return _export(args)
    if args.command == "html":
        return _guarded(_html, args)
    if args.command == "init":
        return _guarded(_init, args)
    raise AssertionError(args.command)  # pragma: no cover - argparse allows no other


def _add(args: argparse.Namespace) -> int:
    failed = 0
    try:
        require("sqlalchemy", "history", "the energy history (edgeenergy history)")
        from pytest_edgeenergy.history.store import open_store

        with open_store(args.db) as store:
            for path in args.reports:
                try:
                    done = store.add_report(path, branch=args.branch, unfinished=args.unfinished)
                except HistoryError:
                    raise  # the database, not the report: no use going on
                except (EdgeEnergyError, OSError) as e:
                    _say(str(e))
                    failed += 1
                    continue
                if done.added:
                    print(
                        f"added run {done.run_id}: {counted(done.tests, 'test')}, "
                        f"{counted(done.results, 'metric value')}",
                        flush=True,
                    )
                else:
                    print(f"already in the history: run {done.run_id}", flush=True)
    except (EdgeEnergyError, OSError) as e:
        _say(str(e))
        return 2
    return 2 if failed else 0


def _say(message: str) -> None:
    print(f"edgeenergy: {message}", file=sys.stderr, flush=True)


def _guarded(command: Any, args: argparse.Namespace) -> int:
    try:
        require("sqlalchemy", "history", "the energy history (edgeenergy history)")
        return int(command(args))
    except (EdgeEnergyError, OSError) as e:
        _say(str(e))
        return 2


def _init(args: argparse.Namespace) -> int:
    from pytest_edgeenergy.history.store import open_store

    with open_store(args.db, create=True) as store:
        runs = len(store.run_ids())
    if store.created:
        print(f"created the history database {store.name} (empty)")
    else:
        print(f"the history database {store.name} is there already: {counted(runs, 'run')}")
    return 0


def _open(args: argparse.Namespace) -> HistoryStore:
    """The history for a command that reads it: never created here (only ``add`` does)."""
    from pytest_edgeenergy.history.store import open_store

    return open_store(args.db, create=False)


def _gate(args: argparse.Namespace) -> int:
    from pytest_edgeenergy.present.verdict import render_verdict
    from pytest_edgeenergy.report.load import load_report
    from pytest_edgeenergy.verdict.expr import parse_expr
    from pytest_edgeenergy.verdict.history import history_verdict
    from pytest_edgeenergy.verdict.view import expr_metrics, gate_view, require_carried

    exprs = [parse_expr(e) for e in args.fail]
    report = load_report(args.report)
    require_carried(gate_view(report, expr_metrics(exprs)), exprs, str(args.report))
    with _open(args) as store:
        verdict = history_verdict(
            store,
            report,
            exprs,
            window=args.window,
            branch=args.branch,
            strict=args.fail_insufficient,
            new_name=str(args.report),
        )
    if not verdict.device_matched:
        verdict.messages.append("add this run with `edgeenergy history add`")
    print(render_verdict(verdict, args.format), end="")
    return 1 if verdict.failed else 0


def _changes(args: argparse.Namespace) -> int:
    from pytest_edgeenergy.history.changes import find_changes

    found: list[dict[str, Any]] = []
    with _open(args) as store:
        _check_metric(store, args.metric)
        every = store.series(
            test=args.test, metric=args.metric, since=args.since, branch=args.branch
        )
    _none_matched(args, len(every))
    progress = ProgressLine()
    for i, series in enumerate(every):
        points = series.points  # a series too short for a change gives none
        values = [p.value for p in points]
        for change in find_changes(values, min_size=args.min_size, alpha=args.alpha):
            before, first = points[change.index - 1], points[change.index]
            found.append(
                {
                    "device": series.device_label,
                    "point": series.point,
                    "test": series.test,
                    "metric": series.metric,
                    "unit": series.unit,
                    "run_id": first.run_id,
                    "started_at": first.started_at.isoformat(),
                    "commits": [before.commit, first.commit],
                    "runs_before": change.index,
                    "runs_after": len(points) - change.index,
                    "before": change.before,
                    "after": change.after,
                    "change_pct": 100.0 * change.rel_change,
                    "p_value": change.p_value,
                    "autocorrelation": change.autocorrelation,
                    "autocorrelated": change.autocorrelated,
                }
            )
        progress("finding changes", i + 1, len(every))
    if args.json:
        print(json.dumps({"series": len(every), "changes": found}, indent=2))
        return 0
    print(_changes_text(found, len(every)))
    return 0


def _none_matched(args: argparse.Namespace, series: int) -> None:
    """Say so when ``--test`` matched no series (a pattern read otherwise than meant would
    print an empty result, silently)."""
    if args.test is None or series:
        return
    from pytest_edgeenergy.ranges import shown

    given = {k: getattr(args, k, None) for k in ("metric", "since", "branch")}
    if args.command == "html" and given["metric"] == DEFAULT_METRIC:
        del given["metric"]  # the page's default, not a filter the user gave
    others = [f"--{k}" for k, v in given.items() if v]
    hint = (
        "* (any text) and ? (one character) are its only wildcards, brackets match themselves"
        if any(ch in args.test for ch in "*?")
        else "it is a whole test id (suites/test_x.py::test_y[params]) unless it holds * or ?,"
        " e.g. '*test_y*'"
    )
    _say(
        f"no series match --test {shown(args.test)}"
        + (f" with {' and '.join(others)}" if others else "")
        + f": {hint}"
    )


def _check_metric(store: HistoryStore, metric: str | None) -> None:
    """:class:`~pytest_edgeenergy.errors.InvalidValue` naming the metrics the history
    holds when it holds no result of ``metric`` (a typo would list nothing, silently)."""
    if metric is None:
        return
    held = store.metric_names()
    if metric not in held:
        from pytest_edgeenergy.errors import InvalidValue

        raise InvalidValue(
            f"--metric {metric!r}: the history {store.name} holds no result of it; "
            + (f"its metrics: {', '.join(held)}" if held else "it holds no results yet")
        )


def _changes_text(found: Sequence[dict[str, Any]], series: int) -> str:
    from pytest_edgeenergy.history.changes import AUTOCORRELATED
    from pytest_edgeenergy.present.tables import Change, Marked, Table, fold_columns, render_text

    table = Table(
        ["test", "metric", "device", "point", "from run", "commits", "before", "after",
         "change %", "p-value"],
        title="Changes in the energy history",
    )  # fmt: skip
    for c in found:
        before, after = c["commits"]
        table.rows.append(
            [c["test"], f"{c['metric']} [{c['unit']}]" if c["unit"] else c["metric"],
             c["device"], c["point"], c["started_at"][:19],
             f"{_short(before)}..{_short(after)}", c["before"], c["after"],
             Change(c["change_pct"]),
             Marked(c["p_value"], "~") if c["autocorrelated"] else c["p_value"]]
        )  # fmt: skip
    if not found:
        return f"no change in {series} series"
    table.notes.append(
        f"{counted(len(found), 'change')} in {series} series; "
        "commits: the last run before the change .. the first run after it"
    )
    shared = ["metric", "device", "point", "from run", "commits"]
    if any(c["autocorrelated"] for c in found):
        table.notes.append(f"~ {AUTOCORRELATED}")
    return render_text(fold_columns(table, shared))


def _short(commit: str | None) -> str:
    return commit[:10] if commit else "?"


def _export(args: argparse.Namespace) -> int:
    from pytest_edgeenergy.history.export import FORMATS, render, stored_runs
    from pytest_edgeenergy.report.load import load_report
    from pytest_edgeenergy.report.writer import atomic_write_text

    try:
        if args.format not in FORMATS:  # before any file or database is read
            _say(f"unknown export format {args.format!r}; allowed: {', '.join(FORMATS)}")
            return 2
        if args.report is not None:
            reports = [load_report(args.report)]
        else:
            require("sqlalchemy", "history", "the energy history (edgeenergy history)")
            with _open(args) as store:
                reports = stored_runs(store, args.run)
        text = render(reports, args.format, args.metric)
        if args.output is None:
            sys.stdout.write(text)
        else:
            atomic_write_text(args.output, [text])
    except (EdgeEnergyError, OSError) as e:
        _say(str(e))
        return 2
    return 0


def _html_parser(sub: Any) -> None:
    page = sub.add_parser(
        "html",
        help="one self-contained HTML page of the history: trends, changes, latest runs",
        description="Write the fleet page: per board x test x operating point the trend of "
        "--metric over the runs with its changes (as `history changes` finds them) and the "
        "commits at each; the latest run of each board side by side; filters by board, "
        "suite and operating point. One file, no network needed to view it.",
    )
    page.add_argument("out", type=Path, metavar="OUT.html", help="the page to write (replaced)")
    page.add_argument(
        "--metric",
        default="energy_per_item",
        metavar="NAME",
        help="the metric to plot (default energy_per_item; energy_j where a test has none)",
    )
    page.add_argument("--test", metavar="PATTERN", help=TEST_HELP)
    page.add_argument("--since", type=_date, metavar="DATE", help="runs from DATE (ISO)")
    page.add_argument("--branch", metavar="NAME", help="only runs recorded on this branch")
    page.add_argument(
        "--max-series",
        type=MAX_SERIES,
        default=DEFAULT_MAX_SERIES,
        metavar="N",
        help=f"series drawn at most (default {DEFAULT_MAX_SERIES}): those with changes first, "
        "the most recent regression first; the page says how many were left out; 0 draws "
        f"every one; {MAX_SERIES.describe()}",
    )
    page.add_argument("--db", metavar="URL_OR_PATH", help=DB_HELP)


def _html(args: argparse.Namespace) -> int:
    from pytest_edgeenergy.history.page import fleet_page
    from pytest_edgeenergy.report.writer import atomic_write_text

    out: Path = args.out
    where = out.parent
    # said before the history is read and every figure drawn
    why = None
    if not where.is_dir():
        why = f"no directory {where} (create it first)"
    elif not os.access(where, os.W_OK):
        why = f"the directory {where} is not writable"
    elif out.is_dir():
        why = "it is a directory"
    if why is not None:
        _say(f"cannot write the page {out}: {why}")
        return 2
    with _open(args) as store:
        if args.metric != DEFAULT_METRIC:
            _check_metric(store, args.metric)
        page = fleet_page(
            store, metric=args.metric, test=args.test, since=args.since, branch=args.branch,
            max_series=args.max_series or None, progress=ProgressLine(),
        )  # fmt: skip
    _none_matched(args, page.found)
    try:
        atomic_write_text(out, [page.html])
    except OSError as e:
        _say(f"cannot write the page {out}: {e.strerror or e}")
        return 2
    print(
        f"wrote {out}: {page.series} series, {counted(page.changes, 'change')}, "
        f"{counted(page.boards, 'board')}"
    )
    if page.left_out:
        print(
            f"{page.left_out} of {page.found} series left out (--max-series {args.max_series}: "
            "those with changes first, the most recent regression first); narrow the page "
            "with --test, --since or --branch, or draw more with --max-series N (0: every one)"
        )
    return 0


class ProgressLine:
    """Progress of long work on stderr (``edgeenergy: drawing: 20 of 50 series``): in each
    phase, the first line once ``delay_s`` have passed since its first step, then one every
    ``every_s``, and its last step when it said anything; quick work says nothing."""

    def __init__(self, delay_s: float = 2.0, every_s: float = 5.0) -> None:
        import time

        self._clock = time.monotonic
        self._delay_s = delay_s
        self._every_s = every_s
        self._phase = ""
        self._next = 0.0
        self._said = False

    def __call__(self, what: str, done: int, total: int) -> None:
        now = self._clock()
        if what != self._phase:
            self._phase, self._next, self._said = what, now + self._delay_s, False
        if now < self._next and not (done == total and self._said):
            return
        self._next = now + self._every_s
        self._said = True
        print(f"edgeenergy: {what}: {done} of {total} series", file=sys.stderr, flush=True)
