"""Marks: the lines a measured command writes to say where its own windows begin and end.

The format (one line each, UTF-8, at most :data:`MAX_LINE_BYTES` bytes with its newline,
written with one ``write()`` so that lines from several threads or processes never mix)::

    begin LABEL [t_ns=NS]
    end LABEL [t_ns=NS] [items=N]

``NS`` is the instant in CLOCK_MONOTONIC nanoseconds (``time.monotonic_ns()``,
``clock_gettime(CLOCK_MONOTONIC)``): the clock is system-wide, the same inside a container
(unless it runs in its own time namespace), so a window's edges are the command's own
instants, not the time the harness read the line. A line without ``t_ns`` takes the time the
harness read it (at most the command's exit). ``items=N`` (an integer >= 0) on an ``end``
gives the window's work, for figures per item. ``LABEL``: :data:`LABEL_PATTERN`.

Pairing, per run (:class:`MarkBook`): an ``end`` closes the open window of its label.
Windows of different labels may nest or overlap (each is integrated on its own); a label
begun again while open, an ``end`` without its ``begin``, a ``begin`` never ended, a stamp
outside the run or an ``end`` before its ``begin`` are problems: counted, said, never a
crash, never a window. The same label again in one run becomes ``LABEL#2``, ``LABEL#3``...,
as a library session names its windows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from ..errors import EdgeEnergyError

__all__ = [
    "LABEL_PATTERN",
    "MARK_ENV",
    "MAX_LINE_BYTES",
    "BadMark",
    "Mark",
    "MarkBook",
    "MarkedSpan",
    "parse_mark",
]

MARK_ENV = "EDGEENERGY_MARK"
"""The environment variable naming the channel (a FIFO's path) a measured command writes
its marks to."""
MAX_LINE_BYTES = 4096
"""PIPE_BUF on Linux: a write of at most this many bytes to a FIFO is never interleaved."""
LABEL_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.:/+-]{0,127}"
"""A label: up to 128 letters, digits and ``_ . : / + -``, not starting with a sign or dot
(``#`` is the numbering of a repeated label's windows)."""
MAX_PROBLEMS_KEPT = 20
"""Problems kept word for word per run; the rest are counted."""

_LABEL = re.compile(LABEL_PATTERN)
_UINT = re.compile(r"[0-9]{1,20}")

Verb = Literal["begin", "end"]
C = TypeVar("C")


class BadMark(EdgeEnergyError, ValueError):
    """A line that is not a mark; the message says why (the harness counts it, never raises
    it to the user)."""


@dataclass(frozen=True)
class Mark:
    """One parsed mark."""

    verb: Verb
    label: str
    t_ns: int
    """CLOCK_MONOTONIC, ns: the command's stamp, else the time the harness read it."""
    stamped: bool
    """True: the command stamped it (``t_ns=``); False: the harness's time of reading."""
    items: int | None = None


def _quote(line: str) -> str:
    return repr(line if len(line) <= 80 else line[:77] + "...")


def parse_mark(line: str, received_ns: int) -> Mark:
    """The mark ``line`` says (without its newline), read at ``received_ns``;
    :class:`BadMark` naming what is wrong and what is allowed."""
    words = line.split()
    if not words:
        raise BadMark("an empty line")
    verb = words[0]
    if verb not in ("begin", "end"):
        raise BadMark(f"{_quote(line)}: begins with {verb!r}; allowed: begin, end")
    if len(words) < 2:
        raise BadMark(f"{_quote(line)}: no label after {verb!r}")
    label = words[1]
    if not _LABEL.fullmatch(label):
        raise BadMark(
            f"{_quote(line)}: label {label!r} is not allowed; a label is 1-128 letters, digits "
            "and _ . : / + - (not starting with . : / + -)"
        )
    fields: dict[str, int] = {}
    for word in words[2:]:
        key, sep, value = word.partition("=")
        allowed = ("t_ns", "items") if verb == "end" else ("t_ns",)
        if not sep or key not in allowed:
            raise BadMark(
                f"{_quote(line)}: {word!r} is not allowed; allowed: "
                + ", ".join(f"{k}=N" for k in allowed)
            )
        if key in fields:
            raise BadMark(f"{_quote(line)}: {key} given twice")
        if not _UINT.fullmatch(value):
            raise BadMark(f"{_quote(line)}: {key}={value!r} is not an integer >= 0")
        fields[key] = int(value)
    stamped = "t_ns" in fields
    return Mark(
        verb=verb,  # type: ignore[arg-type]  # checked above
        label=label,
        t_ns=fields["t_ns"] if stamped else received_ns,
        stamped=stamped,
        items=fields.get("items"),
    )


@dataclass(frozen=True)
class MarkedSpan(Generic[C]):
    """A window the command marked in one run: its entry's name, its edges and its work,
    and what the caller attached to the lines of its edges (the sampler's counters)."""

    entry: str
    """The label, ``LABEL#2`` for its second window of the run, and so on."""
    label: str
    t0_ns: int
    t1_ns: int
    items: int | None
    stamped: Literal["command", "harness", "mixed"]
    """Whose clock the edges are: both the command's, both the harness's reading, or one each."""
    begin: C
    end: C


@dataclass
class _Open(Generic[C]):
    mark: Mark
    attached: C


@dataclass
class MarkBook(Generic[C]):
    """The marks of one run, paired into windows. ``start_ns``/``end_ns``: the run's window
    (a stamp outside it is not this run's); ``reserved``: labels that are not the command's
    to use (the whole run's entry)."""

    start_ns: int
    end_ns: int
    reserved: Sequence[str] = ()
    spans: list[MarkedSpan[C]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """The first :data:`MAX_PROBLEMS_KEPT` problems, word for word."""
    problem_count: int = 0
    _open: dict[str, _Open[C]] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict)

    def problem(self, text: str) -> None:
        """Count a problem (kept word for word while there are few)."""
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(text)

    def feed(self, line: str, received_ns: int, attached: C) -> None:
        """One line as read (``received_ns``: when), with what the caller attaches to it."""
        try:
            mark = parse_mark(line, received_ns)
        except BadMark as e:
            self.problem(str(e))
            return
        if not mark.stamped:
            mark = Mark(mark.verb, mark.label, min(mark.t_ns, self.end_ns), False, mark.items)
        elif not self.start_ns <= mark.t_ns <= self.end_ns:
            self.problem(
                f"{mark.verb} {mark.label}: t_ns={mark.t_ns} is outside the run "
                f"[{self.start_ns}, {self.end_ns}] (CLOCK_MONOTONIC ns); stamp with "
                "time.monotonic_ns() or clock_gettime(CLOCK_MONOTONIC)"
            )
            return
        if mark.label in self.reserved:
            self.problem(
                f"{mark.verb} {mark.label}: the whole run's entry has this name; "
                "give the window another label"
            )
            return
        if mark.verb == "begin":
            self._begin(mark, attached)
        else:
            self._end(mark, attached)

    def _begin(self, mark: Mark, attached: C) -> None:
        if mark.label in self._open:
            self.problem(
                f"begin {mark.label}: already open (windows that nest or overlap need "
                "different labels); this begin ignored"
            )
            return
        self._open[mark.label] = _Open(mark, attached)

    def _end(self, mark: Mark, attached: C) -> None:
        opened = self._open.pop(mark.label, None)
        if opened is None:
            self.problem(f"end {mark.label}: no window {mark.label} is open")
            return
        start = opened.mark
        if mark.t_ns < start.t_ns:
            self.problem(
                f"end {mark.label}: t_ns={mark.t_ns} is before its begin's t_ns={start.t_ns}"
            )
            return
        n = self._seen.get(mark.label, 0) + 1
        self._seen[mark.label] = n
        whose: Literal["command", "harness", "mixed"] = "mixed"
        if start.stamped == mark.stamped:
            whose = "command" if mark.stamped else "harness"
        self.spans.append(
            MarkedSpan(
                entry=mark.label if n == 1 else f"{mark.label}#{n}",
                label=mark.label,
                t0_ns=start.t_ns,
                t1_ns=mark.t_ns,
                items=mark.items,
                stamped=whose,
                begin=opened.attached,
                end=attached,
            )
        )

    def close(self) -> None:
        """The run is over: a window still open is a problem."""
        for label in self._open:
            self.problem(f"begin {label}: never ended")
        self._open.clear()
