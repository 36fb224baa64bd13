"""What ``--edge-shard-durations`` reads: the tests' durations in earlier energy reports,
pytest-split's ``.test_durations`` and JUnit XML files, one file or a directory of them.

A file's kind is read from its content, never only its name: a JSON object with a
``schema_version`` is an energy report (read by the report loader: its ``duration_s`` per
test); another JSON object of ``{node id: seconds}`` (or a list of ``[node id, seconds]``
pairs, pytest-split's format before 0.4) is pytest-split's durations; XML whose root is
``testsuites`` or ``testsuite`` is JUnit (:mod:`.junit_times`). A directory gives its
``*.json``, ``*.xml`` and ``.test_durations`` files, in any mix. Every file is opened without
waiting (a FIFO is refused, never read) and read up to the size limit of a report.

A test's duration is the median of what the files say of it; the plugin matches them to
the collected tests (:meth:`Durations.timing`).
"""

from __future__ import annotations

import json
import math
import os
import stat
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import EdgeEnergyError
from ..ranges import shown
from .junit_times import JUnitCase, JUnitError, match_cases, read_cases

__all__ = [
    "ACCEPTED",
    "Durations",
    "DurationsError",
    "Timing",
    "durations_of",
    "read_durations",
]

ACCEPTED = (
    "give an energy report, pytest-split's .test_durations ({node id: seconds}), a JUnit "
    "XML file (pytest --junitxml) or a directory of them"
)
DIRECTORY_NAMES = ("*.json", "*.xml", ".test_durations")
"""The files of a directory that are read (each one's kind read from its content)."""
_CHUNK_BYTES = 64 * 1024
_BLANK = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class DurationsError(EdgeEnergyError, ValueError):
    """A path that gives no durations; the message names it and says what is accepted."""


@dataclass(frozen=True)
class Timing:
    """The durations of the collected tests, and how many entries named none of them."""

    seconds: dict[str, float]
    """Seconds per collected test id that the files time (the median of their values)."""
    entries: int
    """Distinct tests the files time (a node id, or a JUnit case's address)."""
    unmatched: int
    """Of ``entries``, those matching no collected test."""


@dataclass(frozen=True)
class Durations:
    """What the files say: seconds per node id, and JUnit cases to match at collection."""

    by_id: Mapping[str, Sequence[float]] = field(default_factory=dict)
    cases: Sequence[JUnitCase] = ()

    @classmethod
    def of(cls, seconds: Mapping[str, float]) -> Durations:
        """One duration per node id."""
        return cls({test_id: [s] for test_id, s in seconds.items()})

    def timing(self, test_ids: Iterable[str]) -> Timing:
        """The durations of ``test_ids`` (the collected tests), and how many entries of
        the files match none of them."""
        collected = set(test_ids)
        samples = {t: list(s) for t, s in self.by_id.items() if t in collected}
        found, unmatched_cases = match_cases(self.cases, collected)
        for test_id, seconds in found.items():
            samples.setdefault(test_id, []).extend(seconds)
        unmatched_ids = sum(1 for t in self.by_id if t not in collected)
        entries = len(self.by_id) + len({(c.classname, c.name, c.file) for c in self.cases})
        return Timing(
            {t: statistics.median(s) for t, s in samples.items()},
            entries,
            unmatched_ids + unmatched_cases,
        )


def durations_of(reports: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Seconds per test id: the median of its ``duration_s`` over ``reports`` (tests
    without one are left out)."""
    seen = _report_samples(reports)
    return {test_id: statistics.median(ds) for test_id, ds in seen.items()}


def _report_samples(reports: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    seen: dict[str, list[float]] = {}
    for report in reports:
        for test in report["tests"]:
            d = test.get("duration_s")
            if isinstance(d, (int, float)) and not isinstance(d, bool):
                seen.setdefault(test["id"], []).append(float(d))
    return seen


# -- reading ---------------------------------------------------------------------------------


def read_durations(path: Path) -> Durations:
    """The durations in ``path``: a file of an accepted kind, or a directory of them;
    :class:`DurationsError` names the file and what is accepted."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DurationsError(f"{shown(str(path))} does not exist; {ACCEPTED}") from None
    except OSError as e:
        raise _error(path, f"cannot be read: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        files = sorted(
            {p for pattern in DIRECTORY_NAMES for p in path.glob(pattern) if p.is_file()}
        )
    elif stat.S_ISREG(mode):
        files = [path]
    else:  # a FIFO would wait for a writer, a device never ends: refused before reading
        raise DurationsError(f"{shown(str(path))} is {_kind(mode)}; {ACCEPTED}")
    by_id: dict[str, list[float]] = {}
    cases: list[JUnitCase] = []
    for f in files:
        found_ids, found_cases = _read_file(f)
        for test_id, seconds in found_ids.items():
            by_id.setdefault(test_id, []).extend(seconds)
        cases.extend(found_cases)
    return Durations(by_id, cases)


def _read_file(path: Path) -> tuple[dict[str, list[float]], list[JUnitCase]]:
    with _opened(path) as (handle, limit):
        head = handle.read(_CHUNK_BYTES)
        start = head.removeprefix(_UTF8_BOM).lstrip(_BLANK)[:1]
        if start == b"<" or head.startswith(_UTF16_BOMS):  # expat reads UTF-16 by its BOM
            try:
                return {}, read_cases(_chunks(path, handle, head, limit))
            except JUnitError as e:
                raise _error(path, str(e)) from None
        if start not in (b"{", b"["):
            what = "is empty" if not start else f"starts with {bytes(start)!r}"
            raise _error(path, f"{what}: neither JSON nor XML")
        raw = b"".join(_chunks(path, handle, head, limit))
    doc = _json(path, raw)
    if isinstance(doc, dict) and "schema_version" in doc:
        from ..report.load import ReportError, load_report

        try:
            return _report_samples([load_report(path)]), []
        except ReportError as e:
            raise DurationsError(str(e)) from None
    return {t: [s] for t, s in _split_durations(path, doc).items()}, []


@contextmanager
def _opened(path: Path) -> Iterator[tuple[BinaryIO, int]]:
    """``path`` opened for reading if it is a regular file within the size limit of a
    report, and that limit."""
    from ..report.load import MAX_REPORT_BYTES_ENV, ReportError, max_report_bytes

    try:
        limit = max_report_bytes()
    except ReportError as e:
        raise DurationsError(str(e)) from None
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise _error(path, f"cannot be read: {e.strerror or e}") from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):  # replaced since read_durations looked
            raise _error(path, f"is {_kind(mode.st_mode)}, not a durations file")
        if mode.st_size > limit:
            raise _error(
                path,
                f"is {mode.st_size} bytes, over the {limit} bytes a durations file may "
                f"have; not read (set {MAX_REPORT_BYTES_ENV} to read more)",
            )
        try:
            yield handle, limit
        except OSError as e:
            raise _error(path, f"cannot be read: {e.strerror or e}") from None


def _chunks(path: Path, handle: BinaryIO, head: bytes, limit: int) -> Iterator[bytes]:
    """``head``, then the rest of ``handle`` in blocks, refused past ``limit`` bytes (a
    file may grow after its size was checked)."""
    have = len(head)
    chunk = head
    while chunk:
        if have > limit:
            raise _error(path, f"is over the limit of {limit} bytes")
        yield chunk
        chunk = handle.read(_CHUNK_BYTES)
        have += len(chunk)


def _json(path: Path, raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise _error(path, f"is not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise _error(path, f"corrupt JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise _error(path, "JSON nested too deeply to read") from None


def _split_durations(path: Path, doc: Any) -> dict[str, float]:
    """pytest-split's durations: ``{node id: seconds}``, or (before its 0.4) a list of
    ``[node id, seconds]`` pairs."""
    if isinstance(doc, list):
        if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in doc):
            raise _error(path, "is a JSON list, not one of [node id, seconds] pairs")
        doc = dict(doc)  # as pytest-split reads it: a later pair wins
    if not isinstance(doc, dict):
        raise _error(path, f"is JSON of another kind ({type(doc).__name__})")
    for test_id, seconds in doc.items():
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise _error(
                path,
                f"is JSON, but neither a report nor durations: {shown(test_id)} is "
                f"{_what(seconds)}, not a number of seconds >= 0",
            )
    return {t: float(s) for t, s in doc.items()}


def _what(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return json.dumps(value)  # a number, true, false or null


def _kind(mode: int) -> str:
    for is_kind, words in (
        (stat.S_ISFIFO, "a pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if is_kind(mode):
            return words
    return "not a regular file"


def _error(path: Path, problem: str) -> DurationsError:
    return DurationsError(f"{path}: {problem}; {ACCEPTED}")
