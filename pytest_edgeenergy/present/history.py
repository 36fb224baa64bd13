"""The energy history's text: the change points of ``edgeenergy history changes``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..history.changes import AUTOCORRELATED
from ..words import counted
from .tables import Change, Marked, Table, fold_columns, render_text

_SHARED = ("metric", "device", "point", "from run", "commits")
"""Columns said once above the table when every change shares their value."""


def changes_text(found: Sequence[Mapping[str, Any]], series: int) -> str:
    """The changes found over ``series`` series (each as ``history changes --json`` gives
    it) as a table, what every row shares said once above it; one line when none."""
    if not found:
        return f"no change in {series} series"
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
    table.notes.append(
        f"{counted(len(found), 'change')} in {series} series; "
        "commits: the last run before the change .. the first run after it"
    )
    if any(c["autocorrelated"] for c in found):
        table.notes.append(f"~ {AUTOCORRELATED}")
    return render_text(fold_columns(table, _SHARED))


def _short(commit: str | None) -> str:
    return commit[:10] if commit else "?"
