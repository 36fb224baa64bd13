"""A gate's verdict for people: the table (:func:`verdict_table`), rendered as text,
Markdown, CSV or HTML (:func:`render_verdict`), its summary line (:func:`headline`) and the
outcome in a few words (:func:`gate_outcome`)."""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pytest_edgeenergy.present.tables import (
    Change,
    Format,
    Table,
    fold_columns,
    render,
    render_html_table,
)
from pytest_edgeenergy.verdict.model import GateRow, GateVerdict, Verdict
from pytest_edgeenergy.words import counted

_INS: Verdict = "insufficient"

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
