"""Test times from a JUnit XML file (pytest's ``--junitxml``, other runners' reports),
matched to pytest node ids, for ``--edge-shard-durations``.

A JUnit file holds one ``testcase`` per test, inside ``testsuite`` elements that other
runners nest in each other, each with ``classname`` (pytest: the node id's file as a dotted
module, then its classes), ``name`` (the function with its parameters), ``time`` in
seconds and, in pytest's ``xunit1`` family, ``file``. :func:`read_cases` parses it as a
stream with expat, so memory stays bounded by the longest tag; an entity declaration (an
XML bomb's only means: a JUnit file declares none) stops the parse.

:func:`match_cases` gives each case the collected test pytest would have written it for
(:func:`junit_address`); failing that, the one collected test whose classname ends with the
case's, or that the case's ends with (``--junitprefix``, a file written from another root
directory), when exactly one does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from xml.parsers import expat

from ..errors import EdgeEnergyError

__all__ = ["JUnitCase", "JUnitError", "junit_address", "match_cases", "read_cases"]

ROOTS = ("testsuites", "testsuite")


class JUnitError(EdgeEnergyError, ValueError):
    """Why a text is not a usable JUnit XML file (the caller names the file)."""


@dataclass(frozen=True)
class JUnitCase:
    """One ``testcase``: where it is, and its ``time`` in seconds."""

    classname: str
    name: str
    file: str | None
    seconds: float


def _seconds(text: str, name: str, line: int) -> float:
    try:
        # Some runners group thousands ("1,234.5"), as JUnit readers accept.
        seconds = float(text.replace(",", ""))
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise JUnitError(
            f"testcase {name!r} at line {line} has time={text!r}, not a number of seconds >= 0"
        )
    return seconds


class _Reader:
    """Expat's handlers: the root checked, each timed ``testcase`` kept."""

    def __init__(self) -> None:
        self.parser = expat.ParserCreate()
        self.cases: list[JUnitCase] = []
        self._root_seen = False
        p = self.parser
        p.StartElementHandler = self._start
        p.EntityDeclHandler = self._entity
        p.UnparsedEntityDeclHandler = self._entity
        p.ExternalEntityRefHandler = self._entity

    def _entity(self, *_: Any) -> int:
        raise JUnitError(
            f"declares an XML entity (line {self.parser.CurrentLineNumber}); entities are "
            "refused (a JUnit XML file has none)"
        )

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        if not self._root_seen:
            self._root_seen = True
            if tag not in ROOTS:
                raise JUnitError(
                    f"XML whose root is <{tag}>, not JUnit's <testsuites> or <testsuite>"
                )
        if tag != "testcase" or "name" not in attrs or not attrs.get("time", "").strip():
            return  # a case without a name or a time says nothing about a test's duration
        name = attrs["name"]
        self.cases.append(
            JUnitCase(
                attrs.get("classname", ""),
                name,
                attrs.get("file"),
                _seconds(attrs["time"], name, self.parser.CurrentLineNumber),
            )
        )


def read_cases(chunks: Iterable[bytes]) -> list[JUnitCase]:
    """The timed test cases of the JUnit XML text given as ``chunks`` of bytes;
    :class:`JUnitError` for a text that is not one."""
    reader = _Reader()
    parser = reader.parser
    try:
        for chunk in chunks:
            parser.Parse(chunk, False)
    except expat.ExpatError as e:
        raise JUnitError(
            f"corrupt XML at line {e.lineno}, column {e.offset + 1}: {expat.ErrorString(e.code)}"
        ) from None
    try:
        parser.Parse(b"", True)
    except expat.ExpatError as e:
        raise JUnitError(
            f"truncated XML: the text ends at line {e.lineno} before its root element closes"
        ) from None
    return reader.cases


def junit_address(nodeid: str) -> tuple[str, str]:
    """The ``(classname, name)`` pytest's ``--junitxml`` writes for ``nodeid``:
    ``tests/test_x.py::TestC::test_y[1]`` is ``("tests.test_x.TestC", "test_y[1]")``."""
    path, sep, rest = nodeid.partition("::")
    names_part, bracket, params = rest.partition("[")
    names = [path.replace("/", "."), *(names_part.split("::") if sep else ())]
    names[0] = names[0].removesuffix(".py")
    if bracket:
        names[-1] += f"[{params.removesuffix(']')}]"
    return ".".join(names[:-1]), names[-1]


def _suffixes(classname: str) -> list[str]:
    """``a.b.c``'s dotted suffixes, longest first: ``b.c``, ``c``, then ``""``."""
    parts = classname.split(".") if classname else []
    return [".".join(parts[i:]) for i in range(1, len(parts) + 1)]


def _one(ids: list[str] | None, case: JUnitCase) -> str | None:
    if ids and len(ids) > 1 and case.file:  # two tests with one address: the file tells
        ids = [i for i in ids if i.partition("::")[0] == case.file]
    return ids[0] if ids and len(ids) == 1 else None


def match_cases(
    cases: Iterable[JUnitCase], node_ids: Iterable[str]
) -> tuple[dict[str, list[float]], int]:
    """Each matched test's seconds (one per case), and how many distinct cases match no
    test in ``node_ids`` (or more than one: an ambiguous case is left out)."""
    exact: dict[tuple[str, str], list[str]] = {}
    ends_with: dict[tuple[str, str], list[str]] = {}
    for nodeid in sorted(set(node_ids)):
        classname, name = junit_address(nodeid)
        exact.setdefault((classname, name), []).append(nodeid)
        for suffix in _suffixes(classname):
            ends_with.setdefault((suffix, name), []).append(nodeid)
    seconds: dict[str, list[float]] = {}
    unmatched: set[tuple[str, str, str | None]] = set()
    for case in cases:
        found: list[str] | None = exact.get((case.classname, case.name))
        if not found:  # the case's classname has more before it: a prefix, a higher root
            found = next(
                (ids for s in _suffixes(case.classname) if (ids := exact.get((s, case.name)))),
                None,
            )
        if not found:  # the tests' classnames have more before them: a deeper root
            found = ends_with.get((case.classname, case.name))
        test_id = _one(found, case)
        if test_id is None:
            unmatched.add((case.classname, case.name, case.file))
        else:
            seconds.setdefault(test_id, []).append(case.seconds)
    return seconds, len(unmatched)
