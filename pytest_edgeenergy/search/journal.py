"""The shared study's journal file: Optuna's journal backend, opened as the board's lock and
state files are (``O_NOFOLLOW``: never through a symbolic link; a regular file only) and
recovering from a torn last line.

Optuna's ``JournalFileBackend`` opens the file by name (following a planted link, hanging
on a FIFO) and appends after whatever ends the file: a line cut short by a board that lost
power mid-write becomes the head of the next record and every later read fails. This
:class:`~optuna.storages.journal.BaseJournalBackend` (the interface Optuna's journal
storage takes) reads a final line without its newline, or that is not JSON, as not written
(it may be a write in progress), and under the journal's lock, before writing, cuts such a
line off (saying so): the lock is held, so no write is in progress and the line is torn
for good. A line that is not a record with records after it is damage this cannot judge:
refused, naming the file and the line. Imported by :mod:`.study` only (it imports Optuna).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from typing import Any

from optuna.storages.journal import BaseJournalBackend, JournalFileSymlinkLock

from ..errors import EdgeEnergyError

__all__ = ["JournalDamaged", "JournalFile"]

_CHUNK = 1 << 16


class JournalDamaged(EdgeEnergyError):
    """A journal file that cannot be read or written as one (the message names it)."""


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class JournalFile(BaseJournalBackend):
    """The journal at ``path`` (created when missing; a link or non-regular file refused);
    ``notify`` takes the line saying a torn last line was cut off."""

    def __init__(self, path: str, *, notify: Callable[[str], None] = _to_stderr) -> None:
        self.path = path
        self.notify = notify
        self._lock = JournalFileSymlinkLock(path)
        self._offsets: dict[int, int] = {0: 0}
        """Byte offset of each line number read so far (a read resumes where it stopped)."""
        os.close(self._open(os.O_WRONLY | os.O_CREAT | os.O_APPEND))

    def _open(self, flags: int) -> int:
        try:
            fd = os.open(self.path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP and os.path.islink(self.path):
                raise JournalDamaged(
                    f"study journal {self.path} is a symbolic link (to "
                    f"{os.readlink(self.path)}); a journal is never written through a link: "
                    "give the file itself, or remove the link"
                ) from None
            if e.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, a directory
                raise self._not_regular(os.stat(self.path).st_mode) from None
            raise
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise self._not_regular(mode)
        os.set_blocking(fd, True)
        return fd

    def _not_regular(self, mode: int) -> JournalDamaged:
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a directory"
            if stat.S_ISDIR(mode)
            else "a device or socket"
        )
        return JournalDamaged(
            f"study journal {self.path} is {kind}, not a regular file; give a file (journal:PATH)"
        )

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        """The records from line ``log_number_from`` on; a last line without its newline or
        that is not JSON is not read (a write in progress, or torn: cut at the next write)."""
        start = max((n for n in self._offsets if n <= log_number_from), default=0)
        with os.fdopen(self._open(os.O_RDONLY), "rb") as f:
            remaining = os.fstat(f.fileno()).st_size - self._offsets[start]
            f.seek(self._offsets[start])
            unreadable: int | None = None
            for number, line in enumerate(f, start=start):
                remaining -= len(line)
                if remaining < 0 or not line.endswith(b"\n"):
                    return  # written after the size was taken, or not (yet) whole
                if unreadable is not None:
                    raise self._damaged(unreadable)
                try:
                    log = json.loads(line)
                except ValueError:
                    unreadable = number
                    continue
                self._offsets.setdefault(number + 1, self._offsets[number] + len(line))
                if number >= log_number_from:
                    yield log

    def _damaged(self, number: int) -> JournalDamaged:
        return JournalDamaged(
            f"study journal {self.path}: line {number + 1} is not a journal record and "
            "records follow it (the file was damaged or written by another program); keep a "
            f"copy, then delete that line (sed -i '{number + 1}d' FILE) or start a new journal"
        )

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        """Append ``logs`` under the journal's lock, a torn last line cut off first."""
        data = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode()
        self._lock.acquire()
        try:
            fd = self._open(os.O_RDWR | os.O_APPEND)
            try:
                self._cut_torn_tail(fd)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            self._lock.release()

    def _cut_torn_tail(self, fd: int) -> None:
        """Under the lock: truncate a last line that lacks its newline or is not JSON."""
        size = os.fstat(fd).st_size
        if size == 0:
            return
        whole = os.pread(fd, 1, size - 1) == b"\n"
        start = _line_start(fd, size - 1 if whole else size)
        if whole:
            try:
                json.loads(os.pread(fd, size - start, start))
                return
            except ValueError:
                pass
        os.ftruncate(fd, start)
        os.fsync(fd)
        self._offsets = {n: o for n, o in self._offsets.items() if o <= start}
        self.notify(
            f"edgeenergy: study journal {self.path}: its last line was cut short ({size - start} "
            "bytes of a write that never finished, e.g. a board that lost power); removed it"
        )


def _line_start(fd: int, end: int) -> int:
    """The offset just after the last newline before ``end`` (0 when there is none)."""
    while end > 0:
        begin = max(0, end - _CHUNK)
        found = os.pread(fd, end - begin, begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0
