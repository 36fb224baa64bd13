# ruff: noqa: UP035, UP045  (Python 3.6: typing.Optional, typing.Iterator)
"""edgeenergy_mark: mark your own energy windows for ``edgeenergy measure -- CMD``.

One file, standard library only, Python 3.6 or newer; the package never imports it. Copy it
next to your program, in any environment or container::

    edgeenergy mark-helper > edgeenergy_mark.py

then::

    import edgeenergy_mark as mark

    with mark.window("inference", items=64):
        run_batch()

    mark.begin("load")
    model = load()
    mark.end("load")

Each call writes one line, ``begin LABEL t_ns=NS`` or ``end LABEL t_ns=NS [items=N]``, to
the FIFO named by the environment variable ``EDGEENERGY_MARK``, stamped with CLOCK_MONOTONIC
in nanoseconds when the call is made. Outside ``edgeenergy measure`` (no ``EDGEENERGY_MARK``)
every call does nothing. A mark that cannot be written is said once on stderr and the
program goes on. A LABEL is 1-128 letters, digits and ``_ . : / + -``, not starting with one
of ``. : / + -``; the same label again makes a second window (``LABEL#2`` in the report).
"""

import contextlib
import os
import re
import sys
import threading
import time
from typing import Iterator, Optional

__all__ = ["ENV", "begin", "enabled", "end", "now_ns", "window"]

ENV = "EDGEENERGY_MARK"
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/+-]{0,127}\Z")
_lock = threading.Lock()
_fd = None  # type: Optional[int]
_opened_for = None  # type: Optional[str]
_warned = False


def now_ns() -> int:
    """CLOCK_MONOTONIC now, in nanoseconds (the clock of the marks)."""
    if hasattr(time, "monotonic_ns"):  # Python 3.7+
        return time.monotonic_ns()
    return round(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e9)


def enabled() -> bool:
    """True when running under ``edgeenergy measure`` (``EDGEENERGY_MARK`` is set)."""
    return bool(os.environ.get(ENV))


def _warn(text: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write("edgeenergy_mark: " + text + "; marks are not recorded\n")
        sys.stderr.flush()


def _channel() -> Optional[int]:
    """The FIFO's descriptor, opened at the first mark (again after a fork: same path)."""
    global _fd, _opened_for
    path = os.environ.get(ENV)
    if not path:
        return None
    with _lock:
        if _fd is not None and _opened_for == path:
            return _fd
        try:
            # Non-blocking open: no reader (the harness is gone) fails at once, never hangs;
            # then blocking writes, so that a busy reader slows a mark rather than losing it.
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            os.set_blocking(fd, True)
        except OSError as e:
            _warn(f"cannot open {ENV}={path}: {e.strerror or e}")
            return None
        _fd, _opened_for = fd, path
        return fd


def _write(line: str) -> None:
    fd = _channel()
    if fd is None:
        return
    try:
        os.write(fd, (line + "\n").encode("utf-8"))  # one write: lines never interleave
    except OSError as e:
        _warn(f"cannot write to {ENV}: {e.strerror or e}")


def _check(label: str) -> str:
    if not isinstance(label, str) or not _LABEL.match(label):
        raise ValueError(
            f"mark label {label!r}: use 1-128 letters, digits and _ . : / + - "
            "(not starting with . : / + -)"
        )
    return label


def begin(label: str, t_ns: Optional[int] = None) -> None:
    """Open window ``label`` now (or at ``t_ns``, a :func:`now_ns` taken earlier)."""
    stamp = now_ns() if t_ns is None else int(t_ns)
    _write(f"begin {_check(label)} t_ns={stamp}")


def end(label: str, items: Optional[int] = None, t_ns: Optional[int] = None) -> None:
    """Close window ``label`` now (or at ``t_ns``); ``items``: the work done in it."""
    stamp = now_ns() if t_ns is None else int(t_ns)
    line = f"end {_check(label)} t_ns={stamp}"
    if items is not None:
        if isinstance(items, bool) or not isinstance(items, int) or items < 0:
            raise ValueError(f"mark items={items!r}: must be an integer >= 0")
        line += f" items={items}"
    _write(line)


@contextlib.contextmanager
def window(label: str, items: Optional[int] = None) -> Iterator[None]:
    """The ``with`` body as window ``label``; ``items``: the work done in it (left out when
    the body raises)."""
    begin(label)
    ok = False
    try:
        yield
        ok = True
    finally:
        end(label, items if ok else None)
