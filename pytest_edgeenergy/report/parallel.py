"""Spread per-file work over forked worker processes, this process working alongside.

Reading a large report is CPU-bound Python (JSON parsing, validation), so threads do not
help; worker processes do, and forking them is cheap (nothing to re-import). The calling
process takes items too instead of waiting (and at the end takes back items still queued
for busy workers): with W workers, W + 1 CPUs are busy, and the items it takes itself cost
no pickling. A worker that dies leaves its items to the calling process.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MIN_PARALLEL_BYTES = 16 << 20
"""Below this many bytes of input in all, working alone beats starting workers."""
MAX_WORKERS = 7


def can_fork() -> bool:
    """True where forking workers is safe: Linux (the boards' OS) and a single thread."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def cpu_count() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def workers_for(paths: Sequence[Path], min_bytes: int | None = None) -> int:
    """How many workers to fork for reading ``paths`` (0: read them here, one by one);
    none below ``min_bytes`` in all (default :data:`MIN_PARALLEL_BYTES`)."""
    if len(paths) < 2 or not can_fork():
        return 0
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    if total < (MIN_PARALLEL_BYTES if min_bytes is None else min_bytes):
        return 0
    return max(0, min(cpu_count() - 1, len(paths) - 1, MAX_WORKERS))


def shared_map(
    func: Callable[[T], R], items: Sequence[T], workers: int
) -> Generator[tuple[int, R | Exception], None, None]:
    """``(index, func(item))`` for every item, in about the order of ``items``; an item whose
    call raised gives the exception instead. ``workers`` forked processes and this one take
    items in order as each gets free; 0 workers: all here, in order.

    ``func`` and the items must pickle (``func`` a module-level function or a partial of
    one); results come back pickled through files.
    """
    if workers <= 0 or len(items) <= 1:
        for i, item in enumerate(items):
            yield i, _call(func, item)
        return
    # Results come back through files in a private directory, not through the pool's pipe:
    # a result of a megabyte would cross the pipe in 64 KiB pieces, each waiting for this
    # process's reader thread to get the GIL from the busy main thread.
    scratch = tempfile.TemporaryDirectory(prefix="edgeenergy-", dir=_scratch_root())
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        in_worker = functools.partial(_in_worker, func, scratch.name)
        pending = deque(range(len(items)))
        running: dict[Future[tuple[bool, Any] | None], int] = {}
        started: set[int] = set()  # items a worker claimed: not to be taken back
        # Items queued for the workers: enough that none runs dry while this process is
        # busy with an item of its own; at the end this process takes back those not started.
        depth = 4 * workers
        broken = False
        while pending or running:
            while pending and len(running) < depth and not broken:
                try:
                    future = pool.submit(in_worker, pending[0], items[pending[0]])
                except BrokenProcessPool:
                    broken = True
                    break
                running[future] = pending.popleft()
            done = [future for future in running if future.done()]
            for future in done:
                i = running.pop(future)
                try:
                    outcome: R | Exception = _outcome(future)
                except BrokenProcessPool:  # a worker died (killed): do its items here
                    broken = True
                    outcome = _call(func, items[i])
                yield i, outcome
            if done:
                continue
            if pending:
                # The next item in order, so that results arrive about in order and the
                # caller can go on with them while the rest are still being worked on.
                i = pending.popleft()
                yield i, _call(func, items[i])
                continue
            # Take back a queued item by claiming it, never by cancelling its future: before
            # Python 3.12 a future cancelled while a worker dies stops the pool's own thread
            # half-way through its clean-up, leaving its queue's feeder thread running.
            taken = None
            for future in reversed(running):
                i = running[future]
                if i not in started:
                    try:
                        mine = _claim(scratch.name, i)
                    except OSError:  # no claim to be had: the worker does it
                        mine = False
                    if mine:
                        taken = future
                        break
                    started.add(i)
            if taken is not None:
                i = running.pop(taken)  # the worker that gets it returns at once
                yield i, _call(func, items[i])
                continue
            wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        scratch.cleanup()


_CLAIM_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY


def _claim(directory: str, index: int) -> bool:
    """True for the one process (a worker or the caller) that claims item ``index`` first."""
    try:
        os.close(os.open(os.path.join(directory, f"{index}.claim"), _CLAIM_FLAGS, 0o600))
    except FileExistsError:
        return False
    return True


def _in_worker(
    func: Callable[[T], R], directory: str, index: int, item: T
) -> tuple[bool, Any] | None:
    """:func:`_to_file` of the item, or None when the calling process took it back."""
    try:
        mine = _claim(directory, index)
    except OSError:  # no claim to be had: the caller cannot take it back either
        mine = True
    return _to_file(func, directory, item) if mine else None


def _scratch_root() -> str | None:
    shm = "/dev/shm"  # memory-backed on Linux: no disk writes
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _to_file(func: Callable[[T], R], directory: str, item: T) -> tuple[bool, Any]:
    """``(True, file name)`` of ``func(item)`` pickled, or ``(False, result)`` when the file
    cannot be written (then it goes through the pipe)."""
    result = func(item)
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        fd, name = tempfile.mkstemp(dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError:
        return False, result
    return True, name


def _call(func: Callable[[T], R], item: T) -> R | Exception:
    try:
        return func(item)
    except Exception as exc:
        return exc


def _outcome(future: Future[tuple[bool, Any] | None]) -> Any:
    """The item's result or exception; raises BrokenProcessPool, KeyboardInterrupt..."""
    exc = future.exception()
    if exc is None:
        sent = future.result()
        assert sent is not None, "an item the calling process took back"
        in_file, found = sent
        if not in_file:
            return found
        with open(found, "rb") as handle:
            data = handle.read()
        os.unlink(found)
        return pickle.loads(data)
    if isinstance(exc, Exception) and not isinstance(exc, BrokenProcessPool):
        return exc
    raise exc  # not an item's outcome
