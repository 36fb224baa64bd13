"""Files a person names for reading (a report, a log, a profile table, a database, a
baseline): regular files only, opened without blocking and read in bounded memory, every
problem one line naming the file.

A leaf module (imports nothing of ours but :mod:`.errors`). A FIFO would block the reader
until a writer came, a device such as ``/dev/zero`` never ends, and a directory or a
symbolic-link loop is no file: each is refused from its ``stat``, before anything is read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import InvalidValue

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)


class InputFileError(InvalidValue):
    """A named file that cannot be read as one: ``path`` and the ``problem`` in words."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` is, in words: ``a directory``, ``a pipe (FIFO)``..."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def os_problem(exc: OSError) -> str:
    """An ``OSError`` of opening or ``stat``-ing a named file, as the rest of a line that
    starts with the file's name."""
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno == errno.ELOOP:
        return "is a loop of symbolic links (too many levels of symbolic links)"
    if exc.errno == errno.ENOTDIR:
        return "no such file (a part of the path is a file, not a directory)"
    return f"cannot be read: {exc.strerror or exc}"


def stat_input(path: Path | str) -> os.stat_result | None:
    """``os.stat`` of ``path`` (links followed); None when there is nothing there (a
    dangling link included). :class:`InputFileError` for a loop of links, a path through
    a file, or a file that cannot be looked at."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputFileError(path, os_problem(exc)) from None


@contextmanager
def open_regular(path: Path | str, what: str) -> Iterator[tuple[BinaryIO, int]]:
    """The regular file at ``path``, opened for reading without waiting for a writer
    (``O_NONBLOCK``), with its size then; anything else is refused as ``is a pipe (FIFO),
    not WHAT``. Errors are :class:`InputFileError`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise InputFileError(path, f"is a directory, not {what}") from None
    except OSError as exc:
        raise InputFileError(path, os_problem(exc)) from None
    try:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            raise InputFileError(path, f"is {kind_of(mode.st_mode)}, not {what}")
        handle = os.fdopen(os.dup(fd), "rb", buffering=0)
    except OSError as exc:
        raise InputFileError(path, os_problem(exc)) from None
    finally:
        os.close(fd)
    with handle:
        try:
            yield handle, mode.st_size
        except OSError as exc:
            raise InputFileError(path, os_problem(exc)) from None


def too_large(size: int | str, limit: int, what: str) -> str:
    """The problem of a file over its size limit."""
    return f"is {size} bytes, over the {limit} bytes {what} may have; not read"


def read_bounded(path: Path | str, limit: int, what: str) -> bytes:
    """The bytes of the regular file at ``path``, refused (:class:`InputFileError`) when it
    holds more than ``limit`` bytes; never more than ``limit + 1`` bytes in memory."""
    with open_regular(path, what) as (handle, size):
        if size > limit:
            raise InputFileError(path, too_large(size, limit, what))
        raw = handle.read(limit + 1)  # the file may have grown since fstat
    if len(raw) > limit:
        raise InputFileError(path, too_large(f"more than {limit}", limit, what))
    return raw


def read_text(path: Path | str, limit: int, what: str) -> str:
    """:func:`read_bounded` decoded as UTF-8; a byte that is not is named."""
    raw = read_bounded(path, limit, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"is not UTF-8 text (byte {exc.start}); not {what}") from None


def bounded_lines(path: Path | str, max_line_bytes: int, what: str) -> Iterator[str]:
    """The lines of the regular file at ``path`` (UTF-8, bad bytes replaced), one at a
    time; a line longer than ``max_line_bytes`` is refused, naming its number, so a file
    without line ends (``/dev/zero`` copied to disk) is never held whole."""
    with open_regular(path, what) as (handle, _):
        for number, line in enumerate(_lines(handle, max_line_bytes), start=1):
            if line is None:
                raise InputFileError(
                    path,
                    f"line {number} is longer than {max_line_bytes} bytes; not {what}",
                )
            yield line.decode("utf-8", errors="replace")


def _lines(
    handle: BinaryIO, max_line_bytes: int, block_bytes: int = 1 << 16
) -> Iterator[bytes | None]:
    """Lines of ``handle`` (without the end); None for one over ``max_line_bytes``."""
    buffered = b""
    while True:
        block = handle.read(block_bytes)
        if not block:
            break
        buffered += block
        *whole, buffered = buffered.split(b"\n")
        for line in whole:
            if len(line) > max_line_bytes:
                yield None
                return
            yield line
        if len(buffered) > max_line_bytes:
            yield None
            return
    if buffered:
        yield buffered
