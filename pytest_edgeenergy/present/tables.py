"""One small table type rendered as aligned text, Markdown, CSV or HTML.

Renderers work column by column: a column's value types, taken once, pick the conversion to
text (strings as they are, floats through :func:`format_number`, ...) and whether it is
numeric, so a comparison of 100,000 rows costs no Python call per string cell. Tables whose
rows do not all have one cell per column take the plain row-by-row path.
"""

from __future__ import annotations

import csv
import html
import io
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InvalidValue
from ..words import visible

Format = Literal["table", "markdown", "csv", "html"]
FORMATS: tuple[Format, ...] = ("table", "markdown", "csv", "html")


@dataclass(frozen=True)
class Marked:
    """A number shown with a mark (e.g. ``*`` for a fallback) in text; raw in CSV."""

    value: float | None
    mark: str


class Ratio(float):
    """A ratio, shown as ``1.23x`` in text and as a plain number in CSV."""


class Change(float):
    """A change in percent, shown signed with two decimals (``+9.99``) in text and as a
    plain number in CSV."""


@dataclass
class Table:
    """Columns, rows of plain values (str, int, float, None, :class:`Marked`), and notes;
    ``header``: lines shown between the title and the columns (what every row shares, see
    :func:`fold_columns`), not in CSV."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str = ""
    notes: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)


SHARED = "same on every row: "
"""How the header line of the values every row shares begins."""


def shared_lines(items: Sequence[str], width: int = 100) -> list[str]:
    """``same on every row: a; b; c`` for ``items`` (``name value``), wrapped between items
    at ``width`` characters (continuations indented); empty when there is no item."""
    lines: list[str] = []
    line = fresh = SHARED
    for i, item in enumerate(items):
        text = item + (";" if i < len(items) - 1 else "")
        if line is not fresh and len(line) + len(text) > width:
            lines.append(line.rstrip())
            line = fresh = "  "
        line += text + " "
    if items:
        lines.append(line.rstrip())
    return lines


def fold_columns(
    table: Table,
    names: Sequence[str],
    *,
    empty: Sequence[str] = (),
    items: Sequence[str] = (),
    width: int = 100,
) -> Table:
    """``table`` with each column of ``names`` that holds one value on every row moved into
    a header line (``name value``, after ``items``), and each column of ``names`` or
    ``empty`` that is empty on every row (None or "") dropped; other columns and the notes
    as they are. A table without rows is returned as it is."""
    if not table.rows:
        return table
    dropped: set[int] = set()
    items = list(items)
    for i, name in enumerate(table.columns):
        if name not in names and name not in empty:
            continue
        values = {_hashable(row[i]) for row in table.rows}
        if values <= {None, ""}:
            dropped.add(i)
        elif name in names and len(values) == 1 and not values & {None, ""}:
            items.append(f"{name} {cell_text(table.rows[0][i])}")
            dropped.add(i)
    if not dropped and not items:
        return table
    kept = [i for i in range(len(table.columns)) if i not in dropped]
    return Table(
        [table.columns[i] for i in kept],
        [[row[i] for i in kept] for row in table.rows],
        table.title,
        list(table.notes),
        [*table.header, *shared_lines(items, width)],
    )


def _header_paragraphs(header: Sequence[str]) -> list[str]:
    """Header lines as paragraphs: a wrapped line's continuations (indented) joined back."""
    out: list[str] = []
    for line in header:
        if line.startswith("  ") and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line.strip())
    return out


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, type(None), Marked)) else repr(value)


# "%.Nf" for N = max(0, 3 - floor(log10(magnitude))), indexed by floor(log10(magnitude)) + 4;
# log10 of a magnitude just below 1e-3 or 1e6 may round to -3 or 6, so both ends are covered.
_FIXED = tuple(f"%.{max(0, 3 - e)}f" for e in range(-4, 7))


def format_number(value: float) -> str:
    """Four significant digits, no exponent for everyday magnitudes."""
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e6:  # false for 0, nan and inf
        return _FIXED[math.floor(math.log10(magnitude)) + 4] % value
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    return f"{value:.3e}"


def cell_text(value: Any) -> str:
    """How a cell reads in text formats (text with its invisible characters shown:
    :func:`~pytest_edgeenergy.words.visible`)."""
    kind = type(value)
    if kind is str:
        return visible(value)
    if kind is float:
        return format_number(value)
    if kind is Ratio:
        return f"{value:.2f}x"
    if value is None:
        return "-"
    if isinstance(value, Marked):
        return cell_text(value.value) + value.mark
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Ratio):
        return f"{value:.2f}x"
    if isinstance(value, Change):
        text = f"{value:+.2f}"
        return "+0.00" if text == "-0.00" else text  # no sign from float dust
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def _raw(value: Any) -> Any:
    if isinstance(value, Marked):
        return value.value
    return value


def _is_numeric(value: Any) -> bool:
    inner = _raw(value)
    return isinstance(inner, (int, float)) and not isinstance(inner, bool)


_NONE = type(None)


def _numeric_kind(kind: type) -> bool:
    return issubclass(kind, (int, float)) and not issubclass(kind, bool)


DUST_FRACTION = 1e-12
"""A number below this share of the largest magnitude in its column (of the rows rendered
together) is float dust, what is left of a difference of nearly equal figures (-1.4e-14 J
beside 311 J), and reads 0."""
EXACT_COLUMNS = frozenset({"p-value"})
"""Columns whose tiny numbers mean something (a p-value of 1e-15): never read as dust."""


def _without_dust(values: Sequence[Any]) -> Sequence[Any]:
    """``values`` with every float that is dust (:data:`DUST_FRACTION`) as 0.0."""
    floats = [v for v in values if type(v) is float and math.isfinite(v)]
    if not floats:
        return values
    limit = DUST_FRACTION * max(map(abs, floats))
    if min(map(abs, floats)) >= limit:
        return values
    return [0.0 if type(v) is float and abs(v) < limit else v for v in values]


class _Column:
    """One column's values, their exact types, and what the renderers need to know;
    ``exact``: its numbers are shown as they are (else float dust reads 0)."""

    __slots__ = ("exact", "kinds", "values")

    def __init__(self, values: Sequence[Any], *, exact: bool = False) -> None:
        self.values = values
        self.kinds = set(map(type, values))
        self.exact = exact

    @property
    def _marked(self) -> bool:
        return any(issubclass(k, Marked) for k in self.kinds)

    def any_numeric(self) -> bool:
        """Some cell is a number (also inside a :class:`Marked`)."""
        if self._marked:
            return any(_is_numeric(v) for v in self.values)
        return any(_numeric_kind(k) for k in self.kinds)

    def all_numeric_or_missing(self) -> bool:
        """Every cell is a number or missing (also inside a :class:`Marked`)."""
        if self._marked:
            return all(_is_numeric(v) or _raw(v) is None for v in self.values)
        return all(k is _NONE or _numeric_kind(k) for k in self.kinds)

    def texts(self) -> Sequence[str]:
        """:func:`cell_text` of every cell."""
        kinds, values = self.kinds, self.values
        if kinds <= {str}:
            return list(map(visible, values))
        if float in kinds and not self.exact:
            values = _without_dust(values)
        if kinds <= {float}:
            return list(map(format_number, values))
        if kinds <= {Ratio, _NONE}:
            return ["-" if v is None else f"{v:.2f}x" for v in values]
        if kinds <= {int}:
            return list(map(str, values))
        return list(map(cell_text, values))


def _columns(table: Table) -> list[_Column] | None:
    """The table's columns, or None when some row does not have one cell per column."""
    return _row_columns(table.rows, len(table.columns), _exact(table))


def _exact(table: Table) -> list[bool]:
    return [name in EXACT_COLUMNS for name in table.columns]


def _row_columns(
    rows: Sequence[Sequence[Any]], width: int, exact: Sequence[bool] = ()
) -> list[_Column] | None:
    if width == 0 or any(len(row) != width for row in rows):
        return None
    if not rows:
        return [_Column(()) for _ in range(width)]
    exact = list(exact) or [False] * width
    return [
        _Column(values, exact=e) for values, e in zip(zip(*rows, strict=True), exact, strict=True)
    ]


NOTES_MIN_WIDTH = 100
"""Notes wrap (``render_text(wrap_notes=True)``) at the table's width, or at this many
characters under a narrower table (the width :func:`shared_lines` wraps the header at)."""


def wrapped_notes(notes: Sequence[str], width: int) -> list[str]:
    """Each note wrapped at spaces to ``width`` characters (a word longer than that stays
    whole, a number with the word after it: ``2 tests``, ``4.27 J``, a device label:
    ``sim:nano (simulated)``), its continuation lines indented two spaces more than the
    note."""
    out: list[str] = []
    for note in notes:
        indent = note[: len(note) - len(note.lstrip(" "))] + "  "
        glued = _COUNT_SPACE.sub("\\1\N{NO-BREAK SPACE}", note)
        glued = _LABEL_SPACE.sub("\N{NO-BREAK SPACE}", glued)
        lines = textwrap.wrap(
            glued, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
        )
        out += [line.replace("\N{NO-BREAK SPACE}", " ") for line in lines] or [note]
    return out


_COUNT_SPACE = re.compile(r"(\d) (?=\w)")
"""The space between a number and the word it counts or its unit (kept on one line)."""
_LABEL_SPACE = re.compile(r" (?=\(simulated\))")
"""The space inside a device label (``sim:nano (simulated)``): a label stays on one line."""


def render_text(table: Table, *, wrap_notes: bool = False) -> str:
    """Plain aligned columns; numbers right-aligned. ``wrap_notes``: the notes under the
    table wrapped to its width (at least :data:`NOTES_MIN_WIDTH`)."""
    columns = _columns(table)
    if columns is None:
        return _render_text_rows(table)
    out = []
    if table.title:
        out.append(table.title)
    out.extend(table.header)
    header, rule, padded = [], [], []
    for label, column in zip(table.columns, columns, strict=True):
        texts = column.texts()
        width = max(len(label), max(map(len, texts), default=0))
        rule.append("-" * width)
        if column.any_numeric() and column.all_numeric_or_missing():
            header.append(label.rjust(width))
            padded.append([t.rjust(width) for t in texts])
        else:
            header.append(label.ljust(width))
            padded.append([t.ljust(width) for t in texts])
    out.append("  ".join(header).rstrip())
    out.append("  ".join(rule))
    out.extend(["  ".join(cells).rstrip() for cells in zip(*padded, strict=True)])
    if wrap_notes:
        width = max(NOTES_MIN_WIDTH, len(out[-1 - len(table.rows)]))
        out.extend(wrapped_notes(table.notes, width))
    else:
        out.extend(table.notes)
    return "\n".join(out) + "\n"


def _render_text_rows(table: Table) -> str:
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

    out = []
    if table.title:
        out.append(table.title)
    out.extend(table.header)
    out.append(line(table.columns))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(row) for row in cells)
    out.extend(table.notes)
    return "\n".join(out) + "\n"


def _md_escape(text: str) -> str:
    if "|" not in text and "\n" not in text:
        return text
    return text.replace("|", "\\|").replace("\n", " ")


def _md_column(texts: Sequence[str]) -> Sequence[str]:
    joined = "".join(texts)
    if "|" not in joined and "\n" not in joined:
        return texts
    return [_md_escape(t) for t in texts]


@dataclass
class MarkdownRows:
    """Rows rendered as Markdown lines ahead of their table (see :func:`markdown_rows`)."""

    lines: list[str]
    numeric: list[bool]
    """Per column: some cell is a number (the column is right-aligned)."""

    def extend(self, more: MarkdownRows) -> None:
        """Append ``more`` (rendered rows of the same columns)."""
        self.lines += more.lines
        self.numeric = [a or b for a, b in zip(self.numeric, more.numeric, strict=True)]


def markdown_rows(
    rows: Sequence[Sequence[Any]], width: int, exact: Sequence[bool] = ()
) -> MarkdownRows:
    """``rows`` (of ``width`` cells each) as the lines :func:`render_markdown` writes for them
    (``exact``: per column, its numbers shown as they are, float dust included).

    Rows rendered piece by piece and put together in table order (:meth:`MarkdownRows.extend`)
    render like the whole table: the work can be done while the table is still growing.
    """
    columns = _row_columns(rows, width, exact)
    if columns is None:
        numeric = [any(_is_numeric(row[i]) for row in rows) for i in range(width)]
        lines = ["| " + " | ".join(_md_escape(cell_text(v)) for v in row) + " |" for row in rows]
        return MarkdownRows(lines, numeric)
    texts = [_md_column(c.texts()) for c in columns]
    lines = ["| " + " | ".join(cells) + " |" for cells in zip(*texts, strict=True)]
    return MarkdownRows(lines, [c.any_numeric() for c in columns])


def render_markdown(
    table: Table, heading_level: int = 3, *, rendered: MarkdownRows | None = None
) -> str:
    """GitHub-flavoured Markdown table with the title as a heading and notes as a list.

    ``rendered``: the table's rows already rendered (:func:`markdown_rows` of ``table.rows``).
    """
    if rendered is None:
        rendered = markdown_rows(table.rows, len(table.columns), _exact(table))
    out = []
    if table.title:
        out.append(f"{'#' * heading_level} {_md_escape(table.title)}\n")
    out.extend(f"{_md_escape(line)}\n" for line in _header_paragraphs(table.header))
    out.append("| " + " | ".join(_md_escape(c) for c in table.columns) + " |")
    out.append("|" + "|".join("---:" if n else "---" for n in rendered.numeric) + "|")
    out += rendered.lines
    if table.notes:
        out.append("")
        out.extend(f"- {_md_escape(n)}" for n in table.notes)
    return "\n".join(out) + "\n"


def render_csv(table: Table) -> str:
    """CSV with a header row; numbers at full precision, empty cells for missing values."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    columns = _columns(table)
    if columns is None:
        writer.writerows([_csv_cell(v) for v in row] for row in table.rows)
    else:
        writer.writerows(zip(*[_csv_column(c) for c in columns], strict=True))
    return buffer.getvalue()


def _csv_cell(value: Any) -> Any:
    raw = _raw(value)
    if raw is None:
        return ""
    if isinstance(raw, float):
        return repr(float(raw))
    return raw


def _csv_column(column: _Column) -> Sequence[Any]:
    kinds, values = column.kinds, column.values
    if kinds <= {str, int}:
        return values
    if kinds <= {float, Ratio, Change}:
        return list(map(float.__repr__, values))
    return list(map(_csv_cell, values))


_HTML_SPECIAL = frozenset("&<>\"'")


def _html_column(column: _Column) -> list[str]:
    texts = column.texts()
    if not _HTML_SPECIAL.isdisjoint("".join(texts)):
        texts = list(map(html.escape, texts))
    if column.kinds and all(_numeric_kind(k) for k in column.kinds):
        return [f'<td class="num">{t}</td>' for t in texts]
    if not column.any_numeric():
        return [f"<td>{t}</td>" for t in texts]
    return [
        f'<td class="num">{t}</td>' if _is_numeric(v) else f"<td>{t}</td>"
        for t, v in zip(texts, column.values, strict=True)
    ]


def render_html_table(table: Table) -> str:
    """An HTML fragment: optional heading, the table, notes as a list."""
    out = []
    if table.title:
        out.append(f"<h2>{html.escape(table.title)}</h2>")
    out.extend(f"<p>{html.escape(line)}</p>" for line in _header_paragraphs(table.header))
    out.append("<table>")
    out.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in table.columns) + "</tr>")
    columns = _columns(table)
    if columns is None:
        for row in table.rows:
            tds = "".join(
                f'<td class="num">{html.escape(cell_text(v))}</td>'
                if _is_numeric(v)
                else f"<td>{html.escape(cell_text(v))}</td>"
                for v in row
            )
            out.append(f"<tr>{tds}</tr>")
    else:
        cells = [_html_column(c) for c in columns]
        out.extend(["<tr>" + "".join(row) + "</tr>" for row in zip(*cells, strict=True)])
    out.append("</table>")
    if table.notes:
        out.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in table.notes) + "</ul>")
    return "\n".join(out) + "\n"


_CSS = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px}td.num{text-align:right;"
    "font-variant-numeric:tabular-nums}th{background:#eee}img{max-width:100%;margin:1em 0}"
)


def html_document(title: str, body: str) -> str:
    """A self-contained HTML page around ``body``."""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )


def render(table: Table, fmt: Format) -> str:
    """Render ``table`` in one of :data:`FORMATS` (HTML as a whole page)."""
    if fmt == "table":
        return render_text(table)
    if fmt == "markdown":
        return render_markdown(table)
    if fmt == "csv":
        return render_csv(table)
    if fmt == "html":
        return html_document(table.title or "pytest-edgeenergy", render_html_table(table))
    raise InvalidValue(f"format {fmt!r}: allowed formats are {', '.join(FORMATS)}")
