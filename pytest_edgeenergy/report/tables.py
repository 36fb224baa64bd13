"""One small table type rendered as aligned text, Markdown, CSV or HTML."""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Format = Literal["table", "markdown", "csv", "html"]
FORMATS: tuple[Format, ...] = ("table", "markdown", "csv", "html")


@dataclass(frozen=True)
class Marked:
    """A number shown with a mark (e.g. ``*`` for a fallback) in text; raw in CSV."""

    value: float | None
    mark: str


class Ratio(float):
    """A ratio, shown as ``1.234x`` in text and as a plain number in CSV."""


@dataclass
class Table:
    """Columns, rows of plain values (str, int, float, None, :class:`Marked`), and notes."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str = ""
    notes: list[str] = field(default_factory=list)


def format_number(value: float) -> str:
    """Four significant digits, no exponent for everyday magnitudes."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e6:
        decimals = max(0, 3 - math.floor(math.log10(magnitude)))
        return f"{value:.{decimals}f}"
    return f"{value:.3e}"


def cell_text(value: Any) -> str:
    """How a cell reads in text formats."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is float:
        return format_number(value)
    if value is None:
        return "-"
    if isinstance(value, Marked):
        return cell_text(value.value) + value.mark
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Ratio):
        return f"{value:.3f}x"
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


def render_text(table: Table) -> str:
    """Plain aligned columns; numbers right-aligned."""
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
    out.append(line(table.columns))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(row) for row in cells)
    out.extend(table.notes)
    return "\n".join(out) + "\n"


def _md_escape(text: str) -> str:
    if "|" not in text and "\n" not in text:
        return text
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(table: Table, heading_level: int = 3) -> str:
    """GitHub-flavoured Markdown table with the title as a heading and notes as a list."""
    out = []
    if table.title:
        out.append(f"{'#' * heading_level} {_md_escape(table.title)}\n")
    out.append("| " + " | ".join(_md_escape(c) for c in table.columns) + " |")
    numeric = [any(_is_numeric(row[i]) for row in table.rows) for i in range(len(table.columns))]
    out.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in table.rows:
        out.append("| " + " | ".join(_md_escape(cell_text(v)) for v in row) + " |")
    if table.notes:
        out.append("")
        out.extend(f"- {_md_escape(n)}" for n in table.notes)
    return "\n".join(out) + "\n"


def render_csv(table: Table) -> str:
    """CSV with a header row; numbers at full precision, empty cells for missing values."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([_csv_cell(v) for v in row] for row in table.rows)
    return buffer.getvalue()


def _csv_cell(value: Any) -> Any:
    raw = _raw(value)
    if raw is None:
        return ""
    if isinstance(raw, float):
        return repr(float(raw))
    return raw


def render_html_table(table: Table) -> str:
    """An HTML fragment: optional heading, the table, notes as a list."""
    out = []
    if table.title:
        out.append(f"<h2>{html.escape(table.title)}</h2>")
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
    raise ValueError(f"format {fmt!r}: allowed formats are {', '.join(FORMATS)}")
