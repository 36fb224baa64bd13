"""Writes that stay where they belong: containment checks, no-follow opens, temp files that
are cleaned up, and signals held while a write is in flight (and SIGTERM raised as an
interrupt, :func:`sigterm_raises`, so that cleanup runs as after Ctrl-C).

A leaf module (imports nothing of ours but :mod:`.errors`) used by the control layer (knob
files, lock, journal) and the report layer (report and its temp files). The tool runs as
root on shared machines, so a path it writes must be the file discovery found, resolved
inside the board, and never reached through a final symbolic link planted by someone else.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from .errors import EdgeEnergyError

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class OutsideError(EdgeEnergyError, PermissionError):
    """A path that resolves outside the directory it must stay in, or is a symbolic link
    where the tool creates or writes a file of its own; the message names it."""


def resolves_inside(path: Path | str, base: Path | str) -> bool:
    """True when ``path`` (every link followed) is ``base`` or lies under it."""
    real = os.path.realpath(path)
    top = os.path.realpath(base)
    return real == top or real.startswith(top.rstrip("/") + "/")


def check_inside(path: Path | str, base: Path | str, what: str) -> None:
    """Raise :class:`OutsideError` unless ``path`` resolves inside ``base``."""
    if not resolves_inside(path, base):
        raise OutsideError(
            f"refusing to write {what} {path}: it resolves to {os.path.realpath(path)}, "
            f"outside {base}"
        )


def check_not_link(path: Path | str, what: str) -> None:
    """Raise :class:`OutsideError` when ``path`` itself is a symbolic link."""
    if os.path.islink(path):
        raise OutsideError(
            f"refusing to write {what} {path}: it is a symbolic link (to "
            f"{os.readlink(path)}); remove the link and run again"
        )


def open_nofollow(path: Path | str, flags: int, mode: int = 0o644, *, what: str = "file") -> int:
    """``os.open`` that never follows a final symbolic link (:class:`OutsideError` naming
    ``what`` if it is one) and is closed on exec."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            check_not_link(path, what)
        raise


_deferred: list[int] = []
"""Signals recorded while held (delivered to another thread, or as a Python handler)."""
_depth = 0


def _record(signum: int, frame: FrameType | None) -> None:
    del frame
    _deferred.append(signum)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the body runs (a write or a restore that must not be cut
    in half); a signal that arrives meanwhile is delivered right after, in the main thread.

    Both layers are needed: the mask keeps the signal pending for the main thread and is
    inherited by a tool started meanwhile (``nvpmodel`` cannot be killed mid-switch by the
    terminal's Ctrl-C); the recording handler catches what the kernel hands to another
    thread (a sampler's), which the main thread's mask does not cover. Nested uses keep the
    outer hold. Outside the main thread it does nothing."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    outer = _depth == 0
    previous: dict[int, Any] = {}
    if outer:
        for signum in HELD_SIGNALS:
            previous[signum] = signal.getsignal(signum)
            signal.signal(signum, _record)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if outer:
            for held, handler in previous.items():
                signal.signal(held, handler if handler is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # pending ones arrive now
        if outer:
            late = list(dict.fromkeys(_deferred))
            _deferred.clear()
            for number in late:
                signal.raise_signal(number)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where it lands (:func:`sigterm_raises`) so that a run cleans up as
    after Ctrl-C."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread while the body runs."""

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def take_pending_signal() -> int | None:
    """Inside :func:`signals_held`: consume a SIGINT/SIGTERM that arrived meanwhile, so it
    is not delivered at the end; its number, or None when none came."""
    pending = signal.sigpending() & set(HELD_SIGNALS)
    for signum in pending:
        with contextlib.suppress(OSError):
            signal.sigtimedwait([signum], 0)
    taken = [*_deferred, *sorted(pending)]
    _deferred.clear()
    return int(taken[0]) if taken else None


def temp_name(target: Path) -> str:
    """The prefix of this thread's temp files for ``target``: ``.<name>.<pid>-<thread>.``
    (two threads of one process writing the same file never share a temp file)."""
    return f".{target.name}.{os.getpid()}-{threading.get_native_id()}."


_TEMPS = (
    re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-\d+\.[^/]*tmp$"),
    re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^/]*tmp$"),
)
"""A temp file of :func:`temp_name`, or ``.<name>.<pid>.*tmp`` as older versions named them
(the thread's number, after a dash, tells the pid from a random suffix of digits)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(directory: Path, *, suffix: str = "") -> list[Path]:
    """Remove temp files (``.<name>.<pid>.*tmp``, names ending in ``suffix``) that a
    process killed mid-write left in ``directory``; those of live processes stay. Returns
    what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMPS[0].match(entry.name) or _TEMPS[1].match(entry.name)
        if match is None or not match.group("name").endswith(suffix):
            continue
        if _alive(int(match.group("pid"))) or not entry.is_file(follow_symlinks=False):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed
