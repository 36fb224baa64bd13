"""Table rendering: the column-wise renderers write exactly what the row-by-row definition does."""

from __future__ import annotations

import csv
import html
import io
import itertools
import math
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.present.tables import (
    DUST_FRACTION,
    EXACT_COLUMNS,
    MarkdownRows,
    Marked,
    Ratio,
    Table,
    cell_text,
    format_number,
    markdown_rows,
    render_csv,
    render_html_table,
    render_markdown,
    render_text,
)

# ---------------------------------------------------------------------------------------
# the reference: one cell at a time, as the renderers were first written


def _raw(value: Any) -> Any:
    return value.value if isinstance(value, Marked) else value


def _is_numeric(value: Any) -> bool:
    inner = _raw(value)
    return isinstance(inner, (int, float)) and not isinstance(inner, bool)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def dust_free(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> list[list[Any]]:
    """``rows`` with each float below DUST_FRACTION of its column's largest finite float
    magnitude as 0.0 (the columns of EXACT_COLUMNS as they are)."""
    out = [list(row) for row in rows]
    for i, name in enumerate(columns):
        floats = [abs(row[i]) for row in rows if type(row[i]) is float and math.isfinite(row[i])]
        if name in EXACT_COLUMNS or not floats:
            continue
        for row in out:
            if type(row[i]) is float and abs(row[i]) < DUST_FRACTION * max(floats):
                row[i] = 0.0
    return out


def _shown(table: Table) -> Table:
    """``table`` as the renderers show it: float dust as 0 (:func:`dust_free`)."""
    rows = dust_free(table.rows, table.columns)
    return Table(table.columns, rows, title=table.title, notes=table.notes)


def reference_text(table: Table) -> str:
    table = _shown(table)
    cells = [[cell_text(v) for v in row] for row in table.rows]
    widths = [len(c) for c in table.columns]
    for row in cells:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    numeric = [
        any(_is_numeric(row[i]) for row in table.rows)
        and all(_is_numeric(row[i]) or _raw(row[i]) is None for row in table.rows)
        for i in range(len(table.columns))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    out = [table.title] if table.title else []
    out += [line(table.columns), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in cells] + table.notes
    return "\n".join(out) + "\n"


def reference_markdown(table: Table, *, pieces: Sequence[int] = ()) -> str:
    """``pieces``: the bounds of rows rendered together (dust is judged within each)."""
    bounds = [0, *pieces, len(table.rows)] if pieces else [0, len(table.rows)]
    rows = [
        row
        for start, stop in itertools.pairwise(bounds)
        for row in dust_free(table.rows[start:stop], table.columns)
    ]
    table = Table(table.columns, rows, title=table.title, notes=table.notes)
    out = [f"### {_md_escape(table.title)}\n"] if table.title else []
    out.append("| " + " | ".join(_md_escape(c) for c in table.columns) + " |")
    numeric = [any(_is_numeric(row[i]) for row in table.rows) for i in range(len(table.columns))]
    out.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in table.rows:
        out.append("| " + " | ".join(_md_escape(cell_text(v)) for v in row) + " |")
    if table.notes:
        out.append("")
        out.extend(f"- {_md_escape(n)}" for n in table.notes)
    return "\n".join(out) + "\n"


def _csv_cell(value: Any) -> Any:
    raw = _raw(value)
    if raw is None:
        return ""
    return repr(float(raw)) if isinstance(raw, float) else raw


def reference_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([_csv_cell(v) for v in row] for row in table.rows)
    return buffer.getvalue()


def reference_html(table: Table) -> str:
    table = _shown(table)
    out = [f"<h2>{html.escape(table.title)}</h2>"] if table.title else []
    out.append("<table>")
    out.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in table.columns) + "</tr>")
    for row in table.rows:
        tds = "".join(
            f'<td class="num">{html.escape(cell_text(v))}</td>'
            if _is_numeric(v)
            else f"<td>{html.escape(cell_text(v))}</td>"
            for v in row
        )
        out.append(f"<tr>{tds}</tr>")
    out.append("</table>")
    if table.notes:
        out.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in table.notes) + "</ul>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# tables of every kind of cell, columns of one kind or mixed

_floats = st.floats(allow_nan=True, allow_infinity=True)
_numbers = st.one_of(_floats, st.integers(-(10**20), 10**20))
_cells = st.one_of(
    st.none(),
    st.text(alphabet="ab|\n&<>'\" x1.", max_size=6),
    _floats,
    st.integers(-(10**20), 10**20),
    st.booleans(),
    _floats.map(Ratio),
    st.builds(Marked, st.one_of(st.none(), _numbers, st.booleans()), st.sampled_from(["*", ""])),
)
_column_kinds = st.one_of(
    st.just(_cells),
    st.sampled_from(
        [
            st.text(alphabet="ab|\n&<", max_size=5),
            _floats,
            st.one_of(st.none(), _floats.map(Ratio)),
            st.integers(-5, 5),
            st.one_of(st.none(), _floats),
        ]
    ),
)


@st.composite
def tables(draw: st.DrawFn) -> Table:
    width = draw(st.integers(1, 5))
    kinds = [draw(_column_kinds) for _ in range(width)]
    n_rows = draw(st.integers(0, 8))
    rows = [[draw(k) for k in kinds] for _ in range(n_rows)]
    columns = draw(st.lists(st.text(alphabet="ab| &<\n", max_size=4), min_size=width))
    notes = draw(st.lists(st.text(alphabet="n|<\n", max_size=4), max_size=2))
    title = draw(st.sampled_from(["", "T|<&"]))
    return Table(columns[:width], rows, title=title, notes=notes)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_every_format_matches_the_cell_by_cell_reference(table: Table) -> None:
    assert render_text(table) == reference_text(table)
    assert render_markdown(table) == reference_markdown(table)
    assert render_csv(table) == reference_csv(table)
    assert render_html_table(table) == reference_html(table)


@settings(max_examples=200, deadline=None)
@given(tables(), st.lists(st.integers(0, 8), max_size=3))
def test_markdown_rendered_in_pieces_equals_the_whole(table: Table, cuts: list[int]) -> None:
    width = len(table.columns)
    bounds = sorted({0, len(table.rows), *(min(c, len(table.rows)) for c in cuts)})
    rendered = MarkdownRows([], [False] * width)
    for start, stop in itertools.pairwise(bounds):
        rendered.extend(markdown_rows(table.rows[start:stop], width))
    expected = reference_markdown(table, pieces=bounds[1:-1])
    assert render_markdown(table, rendered=rendered) == expected


def test_rows_longer_than_the_header_still_render_every_cell() -> None:
    table = Table(["a", "b"], [[1.5, "x"], [2.0, "y", "extra"]])
    assert render_markdown(table) == reference_markdown(table)
    assert "| 2.000 | y | extra |" in render_markdown(table)
    assert render_csv(table) == reference_csv(table) == "a,b\n1.5,x\n2.0,y,extra\n"


def test_numbers_right_aligned_and_marked_only_in_text() -> None:
    table = Table(["name", "J"], [["a", Marked(1.5, "*")], ["bb", None], ["c", Ratio(2)]])
    assert render_text(table).splitlines()[2:] == ["a     1.500*", "bb         -", "c      2.00x"]
    assert render_markdown(table).splitlines()[1] == "|---|---:|"
    assert render_csv(table).splitlines()[1:] == ["a,1.5", "bb,", "c,2.0"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Ratio(1.23456), "1.23x"),
        (0.00123456, "0.001235"),
        (0.000123456, "1.235e-04"),
        (1234567.0, "1.235e+06"),
        (3, "3"),
    ],
)
def test_cell_text(value: Any, text: str) -> None:
    assert cell_text(value) == text


def reference_format_number(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e6:
        decimals = max(0, 3 - math.floor(math.log10(magnitude)))
        return f"{value:.{decimals}f}"
    return f"{value:.3e}"


_EDGES = [
    math.nextafter(sign * 10.0**k, toward)
    for k in range(-5, 8)
    for sign in (1, -1)
    for toward in (0.0, sign * math.inf)
] + [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1e-3, 1e6, 999.9999999999999]


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.floats(), st.sampled_from(_EDGES)))
def test_format_number_is_four_significant_digits(value: float) -> None:
    assert format_number(value) == reference_format_number(value)


def test_format_number_at_the_edges_of_fixed_notation() -> None:
    for value in _EDGES:
        assert format_number(value) == reference_format_number(value), value
    assert format_number(math.nextafter(1e6, 0)) == "1000000"
    assert format_number(1e6) == "1.000e+06"
