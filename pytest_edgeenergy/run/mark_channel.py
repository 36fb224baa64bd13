"""The channel a measured command writes its marks to: a FIFO, read by a thread.

A FIFO, not an inherited descriptor, because a path can be bind-mounted into a container
(``docker run -v "$EDGEENERGY_MARK:$EDGEENERGY_MARK" -e EDGEENERGY_MARK ...``) where a
descriptor of the harness cannot follow. It lives in a private temporary directory (mode
0700, the FIFO 0600) removed at the end. The harness holds it open for reading and writing,
so a writer's ``open`` never waits and the last writer closing it is no end of file; a
thread reads it as lines arrive, stamps each read (CLOCK_MONOTONIC ns, for lines the command
did not stamp) and attaches what the caller asks for at that moment (the sampler's
counters), so the command never waits for the harness and nothing is read late.
:meth:`MarkChannel.take` returns every line written before it was called (the command has
exited: its writes are all in the pipe).
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from .marks import MAX_LINE_BYTES

__all__ = ["MAX_LINES", "MarkChannel", "ReadLine"]

C = TypeVar("C")
MAX_LINES = 100_000
"""Lines kept between two :meth:`MarkChannel.take` calls; more are counted, not kept."""
_READ_BYTES = 65536
_SYNC = b"s"
_QUIT = b"q"


class ReadLine(Generic[C]):
    """A line as read: its text (newline removed), when it was read (CLOCK_MONOTONIC ns)
    and what the caller attached then."""

    __slots__ = ("attached", "received_ns", "text")

    def __init__(self, text: str, received_ns: int, attached: C) -> None:
        self.text = text
        self.received_ns = received_ns
        self.attached = attached


class _Marker:
    """The reader's answer to a take: every line read before it is in the queue; how many
    lines it did not keep since the last answer."""

    __slots__ = ("dropped",)

    def __init__(self, dropped: int) -> None:
        self.dropped = dropped


def _cut(line: bytes) -> bytes:
    """A line too long to be a mark, shortened to what a problem report shows of it."""
    return line[:80] + b" ... (a line longer than %d bytes)" % MAX_LINE_BYTES


class MarkChannel(Generic[C]):
    """A FIFO at :attr:`path` and the thread that reads it (see the module docstring);
    ``attach`` is called in the reader thread for each line read."""

    def __init__(self, attach: Callable[[], C], *, directory: Path | None = None) -> None:
        self._attach = attach
        self._parent = directory
        self._dir: Path | None = None
        self.path: Path | None = None
        self._fd = -1
        self._ctl_r = -1
        self._ctl_w = -1
        self._queue: queue.SimpleQueue[ReadLine[C] | _Marker] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending = b""
        self._discarding = False
        self._kept = 0
        self._dropped = 0
        self.failure: BaseException | None = None
        """What stopped the reader thread (a bug of ours); None while it reads."""

    def open(self) -> Path:
        """Make the FIFO and start reading it; returns its path."""
        self._dir = Path(tempfile.mkdtemp(prefix="edgeenergy-mark-", dir=self._parent))
        try:
            path = self._dir / "mark"
            os.mkfifo(path, 0o600)
            self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            self._ctl_r, self._ctl_w = os.pipe()
            self._thread = threading.Thread(target=self._run, name="edgeenergy-marks", daemon=True)
            self._thread.start()
        except BaseException:
            self.close()
            raise
        self.path = path
        return path

    def __enter__(self) -> MarkChannel[C]:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the reader thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._fd, self._ctl_r], [], [])
                if self._fd in ready:
                    self._read_all()
                if self._ctl_r in ready:
                    asked = os.read(self._ctl_r, 64)
                    self._read_all()  # everything written before the ask
                    self._end_of_writes()
                    self._queue.put(_Marker(self._dropped))
                    self._kept = self._dropped = 0
                    if _QUIT in asked:
                        return
        except BaseException as e:  # a bug of ours: take() says it, the command goes on
            self.failure = e
            self._queue.put(_Marker(self._dropped))

    def _read_all(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return
            received_ns = time.monotonic_ns()
            self._split(chunk, received_ns)

    def _split(self, chunk: bytes, received_ns: int) -> None:
        data = self._pending + chunk
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            line = data[start:end]
            start = end + 1
            if self._discarding:  # the rest of a line that was too long
                self._discarding = False
            elif len(line) >= MAX_LINE_BYTES:  # with its newline, over PIPE_BUF
                self._keep(_cut(line), received_ns)
            else:
                self._keep(line, received_ns)
        rest = data[start:]
        if len(rest) >= MAX_LINE_BYTES and not self._discarding:
            self._too_long(rest, received_ns)
            rest = b""
        elif self._discarding:
            rest = b""
        self._pending = rest

    def _too_long(self, head: bytes, received_ns: int) -> None:
        self._discarding = True
        self._keep(_cut(head), received_ns)

    def _end_of_writes(self) -> None:
        """The writers are gone: a last line without its newline is a line."""
        if self._pending:
            line, self._pending = self._pending, b""
            self._keep(line, time.monotonic_ns())
        self._discarding = False

    def _keep(self, line: bytes, received_ns: int) -> None:
        if self._kept >= MAX_LINES:
            self._dropped += 1
            return
        self._kept += 1
        text = line.decode("utf-8", "replace").rstrip("\r")
        self._queue.put(ReadLine(text, received_ns, self._attach()))

    # -- the caller -------------------------------------------------------------------------

    def take(self) -> tuple[list[ReadLine[C]], int]:
        """Every line written to the channel before this call and not taken before, in
        order, and how many more were not kept (over :data:`MAX_LINES`). RuntimeError when
        the reader thread stopped (a bug of ours)."""
        lines: list[ReadLine[C]] = []
        dropped = 0
        if self._thread is not None and self.failure is None:
            os.write(self._ctl_w, _SYNC)
            while True:
                item = self._queue.get()
                if isinstance(item, _Marker):
                    dropped = item.dropped
                    break
                lines.append(item)
        if self.failure is not None:
            raise RuntimeError(f"the marks' reader thread failed: {self.failure!r}")
        return lines, dropped

    def close(self) -> None:
        """Stop the reader, close and remove the FIFO and its directory (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            if thread.is_alive():
                os.write(self._ctl_w, _QUIT)
            thread.join()
        for fd in (self._fd, self._ctl_r, self._ctl_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._ctl_r = self._ctl_w = -1
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.path = None
