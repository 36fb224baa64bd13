"""Notes under every text table wrap to the table's width (at least ``NOTES_MIN_WIDTH``):
a gate's messages as much as compare's report lines (test_wording.py), with nothing lost
and a note that fits kept as it is."""

from __future__ import annotations

from pytest_edgeenergy.present.tables import NOTES_MIN_WIDTH, Table, render_text
from pytest_edgeenergy.present.verdict import render_verdict
from pytest_edgeenergy.verdict.model import GateRow, GateVerdict

LONG = (
    "baseline runs read from /tmp/pytest-of-someone/pytest-123/energy-baselines/main: "
    + ", ".join(
        f"run-{i:02d}.json (sim:agx-orin (simulated), L4T 36.4.3, 12 tests)" for i in range(8)
    )
)


def _row(test_id: str) -> GateRow:
    return GateRow(test_id, "energy_j", "median", "5%", 10.0, 10.1, 1.0, None, "within")


def _fits(lines: list[str], width: int) -> bool:
    """Every line within ``width``, or one word (a path) that cannot be broken."""
    return all(len(line) <= width or " " not in line.strip() for line in lines)


def _said(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines)


def test_a_gate_message_under_its_table_wraps_to_the_tables_width() -> None:
    verdict = GateVerdict(rows=[_row("t.py::test_a"), _row("t.py::test_b")], messages=[LONG])
    lines = render_verdict(verdict, "table").splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    width = max(NOTES_MIN_WIDTH, len(lines[rule]))
    notes = lines[rule + 3 :]
    assert _fits(notes, width), notes
    assert len(notes) > 3 and notes[1].startswith("  ")  # wrapped, continuations indented
    assert LONG in _said(notes)  # nothing lost


def test_a_gate_without_rows_wraps_its_messages_too() -> None:
    lines = render_verdict(GateVerdict(messages=[LONG]), "table").splitlines()
    assert lines[0].startswith("Energy gate: ")
    assert _fits(lines[1:], NOTES_MIN_WIDTH), lines
    assert LONG in _said(lines[1:])


def test_the_markdown_verdict_keeps_each_note_on_one_line() -> None:
    """Markdown wraps by itself: a note is one list item."""
    verdict = GateVerdict(rows=[_row("t.py::test_a")], messages=[LONG])
    assert f"- {LONG}\n" in render_verdict(verdict, "markdown")


def test_notes_wrap_at_a_wide_tables_width_and_a_short_note_is_kept() -> None:
    wide = "w" * (NOTES_MIN_WIDTH + 40)
    text = render_text(Table(["name", "value"], [[wide, 1.5]], notes=[LONG, "short  note"]))
    lines = text.splitlines()
    width = len(lines[1])
    assert width > NOTES_MIN_WIDTH + 40
    notes = lines[3:]
    assert _fits(notes, width) and max(map(len, notes)) > NOTES_MIN_WIDTH  # the table's width
    assert notes[-1] == "short  note"  # as written, its double space too
    assert LONG in _said(notes[:-1])
