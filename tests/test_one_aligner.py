"""One aligner: columns of text for people are padded in one place, ``present/tables.py``
(``Table`` and its renderers, ``align`` for lines without a header). No other module pads
text to a width by hand (``.ljust``, ``f"{x:<20}"``, ``"%-8s"``, ...), except where it
writes another program's own fixed layout, listed here with the reason."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_edgeenergy"
ALIGNER = "present/tables.py"

EXCEPTIONS = {
    "sim/files.py": "a virtual board's live sysfs files hold fixed-width, space-padded values "
    "rewritten in place (no reader ever sees a torn value)",
    "sim/tree.py": "a virtual board's /proc/meminfo, in the kernel's own layout",
    "sim/shims.py": "the jetson_clocks --show shim prints NVIDIA's own layout",
}
"""Modules that pad text for another program's format, not for people: module -> why."""

_PADDING_METHODS = frozenset({"ljust", "rjust", "center"})
_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?z?#?(?P<zero>0)?(?P<width>\d+|\{\})?"
    r"[,_]?(?:\.(?:\d+|\{\}))?[a-zA-Z%]?"
)
"""A format spec (Python's mini-language), a nested ``{w}`` written ``{}``."""
_PERCENT_WIDTH = re.compile(r"%(?:\([^)]*\))?[-+ #]*[1-9*]")
"""A printf-style conversion with a width (``%-20s``, ``%8d``, ``%*s``), zero-padding aside."""


def _pads(spec: str) -> bool:
    """Whether a format spec pads to a width: an alignment, or a width that is not a
    number's zero-padding (``04d`` names a file, it aligns nothing)."""
    m = _SPEC.fullmatch(spec)
    return m is not None and bool(m["align"] or (m["width"] and not m["zero"]))


def _spec_text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(_spec_text(v) for v in node.values)
    return "{}"


def _format_string_pads(text: str) -> bool:
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return False
    return any(spec and _pads(_NESTED.sub("{}", spec)) for _, _, spec, _ in fields)


_NESTED = re.compile(r"\{[^}]*\}")
"""A nested field of a format spec (``{width}``), written ``{}`` for :data:`_SPEC`."""


def padding_calls(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each place of ``source`` that pads text to a width by hand."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _PADDING_METHODS:
                yield node.lineno, f".{node.func.attr}()"
            elif (
                node.func.attr == "format"
                and isinstance(node.func.value, ast.Constant)
                and isinstance(node.func.value.value, str)
                and _format_string_pads(node.func.value.value)
            ):
                yield node.lineno, f"{node.func.value.value!r}.format()"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "format"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Constant | ast.JoinedStr)  # else: not known here
            and _pads(_spec_text(node.args[1]))
        ):
            yield node.lineno, f"format(x, {_spec_text(node.args[1])!r})"
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = _spec_text(node.format_spec)
            if _pads(spec):
                yield node.lineno, f"f-string {{...:{spec}}}"
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and _PERCENT_WIDTH.search(node.left.value)
        ):
            yield node.lineno, f"{node.left.value!r} % ..."


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_only_the_aligner_pads_text_to_a_width() -> None:
    found = []
    for path in _modules():
        name = path.relative_to(PACKAGE).as_posix()
        if name == ALIGNER or name in EXCEPTIONS:
            continue
        source = path.read_text(encoding="utf-8")
        found += [f"{name}:{line}: {what}" for line, what in padding_calls(source)]
    assert not found, (
        "columns aligned by hand outside present/tables.py (make a Table, or use "
        "present.tables.align for lines without a header):\n" + "\n".join(found)
    )


def test_each_exception_still_pads_and_the_aligner_does() -> None:
    """An exception that no longer pads is dropped from the list (it would hide a new one)."""
    for name in [ALIGNER, *EXCEPTIONS]:
        source = (PACKAGE / name).read_text(encoding="utf-8")
        assert list(padding_calls(source)), f"{name} pads nothing: take it off the list"


@pytest.mark.parametrize(
    "source",
    [
        "x.ljust(8)",
        "f'{name:<20} {where:<28}'",
        "f'{name:{width}}'",
        "f'{value:>12}'",
        "f'{name:48}'",
        "f\"{'dvfs':8}\"",
        "'%-20s' % name",
        "'%8.3f' % x",
        "'{:<10}'.format(x)",
        "format(x, '>9')",
        "s.center(30)",
    ],
)
def test_hand_padding_is_found(source: str) -> None:
    assert list(padding_calls(source)), source


@pytest.mark.parametrize(
    "source",
    [
        "f'{x:.3f} {y:.4g} {z:+.2f}'",
        "f'img_{i:04d}.jpg'",
        "f'{x:.{digits}f}'",
        "f'{x:,}'",
        "'%05d %s %.2f' % (a, b, c)",
        "'{:.3g}'.format(x)",
        "format(x, '.4f')",
        "format(x, spec)",
        "f'{when:%Y-%m-%d}'",
    ],
)
def test_precision_and_zero_padding_are_not_alignment(source: str) -> None:
    assert not list(padding_calls(source)), source
