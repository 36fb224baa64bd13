"""A daemon thread that reads a :class:`PowerSource` on a fixed schedule and keeps the samples.

Schedule: slot ``k`` is due at ``t_start + k * interval_s``, so the period does not drift
with the time each read takes; when a read overruns one or more slots, the sampler skips to
the next future slot instead of bursting to catch up (``missed_slots`` counts the skips).
Each sample is stamped with ``time.monotonic()`` taken right after the read returns.

Storage: one ``array('d')`` of timestamps and one per channel, in chunks of ``chunk_size``
samples (default ``min(4096, max_samples // 4)``). Memory is bounded: whole chunks are
dropped from the oldest end so that between ``max_samples`` and ``max_samples + 2 x
chunk_size`` samples are kept. The default keeps 2 h at the sampling interval but at most
720,000 samples (2 h at 100 Hz): about 8 B x (channels + 1) x 720,000, i.e. 40 MB for six
rails, when full. A window longer than what is retained is reported invalid by the meter.

Hot path: at each slot the thread reads and stamps one reading and appends it, undecoded,
to a pending list; every ``FLUSH_PERIOD_S`` (or at once when a reader waits) it decodes the
pending readings into the arrays. For a :class:`~.source.PreadSource` (the INA rails) a
reading is one ``tuple(map(pread, fds, ...))``: no Python frame per file, and the text
parsing runs in a warm batch instead of after every cold wake-up. Readers decode what is
pending before they look, so they always see every reading taken. Other sources are
decoded at once (a source may reuse the sequence it returns).

Failures are per channel: a reading in which some channels failed is stored with NaN for
them (:class:`~.source.PartialReading`) and counted in that channel's errors; a reading
that failed as a whole (no channel read) is not stored and counts for every channel.

Edge readings (:meth:`Sampler.read_edge`): a reader may take one synchronous reading of a
PreadSource (one pread per file, timestamped) outside the stream, for a window's edges.

Native reader (``kind == "native"``, see :mod:`.native`): for a PreadSource read with
``os.pread``, when the C extension is built, a native thread (:mod:`._preadring`) preads the
plan's files on the same schedule into a ring of raw texts, stamped with CLOCK_MONOTONIC
(``time.monotonic()``'s clock), without ever taking the GIL: a Python-heavy test no longer
delays the samples. The Python thread then only wakes every ``NATIVE_FLUSH_PERIOD_S`` (and
when upkeep is due) to drain the ring, run ``maintain`` and decode (a batch with no failure
by columns, :meth:`~.ina.InaSource.decode_columns`); readers drain it too before they
look. Errors, counters, storage and edge readings are the Python path's: a failed pread's
errno becomes the same :class:`~.source.FailedFile` reason, and the positions ``maintain``
flags fail as ``vanished`` in the first reading taken after it began. Upkeep runs at most
once per sampling interval (``maintain_interval_s`` 0 means every interval here, not
before every reading). ``cpu_s`` counts both threads.

Thread safety: appending to the pending list is one atomic list operation; draining,
decoding and readers' copies run under one lock.
"""

from __future__ import annotations

import math
import os
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .native import SamplerKind, choose_kind

if TYPE_CHECKING:
    from ._preadring import Reader
from .source import (
    FailedFile,
    PartialReading,
    PowerSource,
    PreadSource,
    ReadError,
    mark_vanished,
    pread_each,
)

DEFAULT_RETAIN_S = 7200.0
DEFAULT_MAX_SAMPLES = 720_000
DEFAULT_CHUNK_SIZE = 4096
MAX_SLEEP_S = 0.1
"""Longest single sleep of the sampler thread: how long stop() may wait for it."""
FLUSH_PERIOD_S = 0.5
"""How often the thread decodes pending readings of a PreadSource (at most 512 readings)."""
MAX_PENDING = 512
RING_SECONDS = 8.0
"""Readings the native reader's ring holds, in seconds of sampling (Python drains it every
``FLUSH_PERIOD_S``); a slot that finds it full is not read and counts as missed."""
MAX_RING = 1 << 14
NATIVE_FLUSH_PERIOD_S = 1.0
"""How often the Python thread drains the native reader's ring when nobody asks: each wake
of a Python thread costs more than the readings it decodes; readers drain it themselves."""


@dataclass(frozen=True)
class SampleSlice:
    """A copy of consecutive samples: ``ts[k]`` and ``values[c][k]`` for channel ``c``."""

    start_index: int
    """Global index (count since the sampler started) of ``ts[0]``."""
    ts: array[float]
    values: tuple[array[float], ...]

    def __len__(self) -> int:
        return len(self.ts)


@dataclass(frozen=True)
class Counters:
    """Cumulative sampler counters at one instant; windows subtract two of these."""

    attempts: int
    """Readings attempted: ``samples + failed``."""
    samples: int
    """Readings stored (at least one channel read)."""
    errors: dict[str, int] = field(default_factory=dict)
    """Readings with a failed read, by reason (a reading counts once per reason)."""
    cpu_s: float = 0.0
    missed_slots: int = 0
    channel_errors: tuple[dict[str, int], ...] = ()
    """Per channel (in channel order): its failed reads by reason; a reading that failed as
    a whole counts for every channel."""
    failed: int = 0
    """Readings that failed as a whole (not stored)."""

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


@dataclass(frozen=True)
class EdgeReading:
    """One synchronous reading of every channel, taken at a window's edge."""

    t: float
    """``time.monotonic()`` right after the read returned, s."""
    values: tuple[float, ...]
    """Per channel; NaN where it failed."""
    failures: tuple[tuple[str, str], ...] = ()
    """``(channel, reason)`` of each failed channel."""


class _TimeView:
    """Timestamps across chunks seen as one sequence (retained samples only), for bisect."""

    def __init__(self, chunks: list[array[float]], size: int, chunk_size: int) -> None:
        self._chunks = chunks
        self._size = size
        self._cs = chunk_size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> float:
        return self._chunks[i // self._cs][i % self._cs]


class Sampler:
    """Reads ``source`` every ``interval_s`` in a daemon thread."""

    def __init__(
        self,
        source: PowerSource,
        *,
        interval_s: float,
        retain_s: float = DEFAULT_RETAIN_S,
        max_samples: int | None = None,
        chunk_size: int | None = None,
        decode_batch: int | None = None,
    ) -> None:
        """Validate and clamp the interval; nothing runs until :meth:`start`.

        ``decode_batch``: readings of a PreadSource the thread keeps undecoded before it
        decodes them (default: ``FLUSH_PERIOD_S`` worth, at most ``MAX_PENDING``).

        ``interval_s`` below ``source.min_interval_s`` is raised to it (``clamped`` and
        ``clamp_reason`` record it): sampling faster than the sensor updates only repeats
        values at a higher CPU cost.
        """
        if not (isinstance(interval_s, (int, float)) and math.isfinite(interval_s)):
            raise ValueError(f"sampling interval_s must be a finite number, got {interval_s!r}")
        if interval_s <= 0:
            raise ValueError(f"sampling interval_s must be > 0 s, got {interval_s!r}")
        self._source = source
        self._channels = tuple(source.channels)
        self.requested_interval_s = float(interval_s)
        self.clamped = False
        self.clamp_reason: str | None = None
        min_s = source.min_interval_s
        if min_s is not None and interval_s < min_s:
            self.clamped = True
            self.clamp_reason = (
                f"interval {interval_s * 1e3:g} ms is below the {source.name} sensor update "
                f"period {min_s * 1e3:g} ms; sampling at {min_s * 1e3:g} ms"
            )
            interval_s = min_s
        self.interval_s = float(interval_s)
        if max_samples is None:
            if not (math.isfinite(retain_s) and retain_s > 0):
                raise ValueError(f"retain_s must be a finite number > 0, got {retain_s!r}")
            max_samples = min(math.ceil(retain_s / self.interval_s) + 1, DEFAULT_MAX_SAMPLES)
        if max_samples < 1:
            raise ValueError(f"max_samples must be >= 1, got {max_samples!r}")
        self.max_samples = int(max_samples)
        if chunk_size is None:
            chunk_size = min(DEFAULT_CHUNK_SIZE, max(1, self.max_samples // 4))
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size!r}")
        self._cs = int(chunk_size)

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._ts_chunks: list[array[float]] = []
        self._val_chunks: list[list[array[float]]] = []
        self._first_index = 0
        self._count = 0
        self._attempts = 0
        self._errors: dict[str, int] = {}
        self._channel_errors: list[dict[str, int]] = [{} for _ in self._channels]
        self._channel_pos = {name: c for c, name in enumerate(self._channels)}
        self._failed = 0
        self._missed = 0
        self._last_t = -math.inf
        self._cpu_s = 0.0
        self._cpu_clock: int | None = None
        self.last_error: str | None = None
        """Text of the most recent failed read, for diagnostics."""

        self._pending: list[tuple[float, Sequence[bytes | FailedFile] | Sequence[float]]] = []
        if decode_batch is None:
            decode_batch = min(MAX_PENDING, max(1, round(FLUSH_PERIOD_S / self.interval_s)))
        if decode_batch < 1:
            raise ValueError(f"decode_batch must be >= 1, got {decode_batch!r}")
        # isinstance on a runtime Protocol costs tens of µs: decided once, here.
        self._psrc = source if isinstance(source, PreadSource) else None
        kind, why = choose_kind(source)
        self.kind: SamplerKind = kind
        """``native`` (the C reader thread reads the files) or ``python``."""
        self.kind_reason = why
        """Why the kind is not native (None when it is)."""
        self._ring: Reader | None = None
        self._flag_positions: tuple[int, ...] = ()
        self._flag_after = math.inf
        self._flush_every = int(decode_batch) if self._psrc is not None else 1
        self._decode: Callable[[Any], Sequence[float]] | None = None
        self._waiting = 0

        self._stopping = False
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def source(self) -> PowerSource:
        return self._source

    @property
    def channels(self) -> tuple[str, ...]:
        return self._channels

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stopping

    def start(self) -> None:
        """Start the thread (once; a stopped sampler cannot be restarted)."""
        if self._thread is not None:
            if self._stopping:
                raise RuntimeError("sampler was stopped; create a new Sampler")
            return
        if self.kind == "native":
            self._ring = self._new_ring()
        self._thread = threading.Thread(
            target=self._run, name=f"edgeenergy-sampler-{self._source.name}", daemon=True
        )
        self._thread.start()
        # Read the thread's CPU clock from outside (Linux): the hot loop then needs no
        # thread_time() syscall per sample.
        try:
            assert self._thread.ident is not None
            self._cpu_clock = time.pthread_getcpuclockid(self._thread.ident)
        except (AttributeError, OSError):
            self._cpu_clock = None

    def _new_ring(self) -> Reader:
        from ._preadring import Reader

        assert self._psrc is not None
        plan = self._psrc.pread_plan()
        capacity = min(MAX_RING, max(64, math.ceil(RING_SECONDS / self.interval_s)))
        return Reader(plan.fds, plan.size, self.interval_s, capacity)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and wait for it (the source is left open)."""
        self._stopping = True
        with self._cond:  # wakes the native mode's Python thread
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        with self._cond:
            self._cond.notify_all()

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the thread ------------------------------------------------------------------
    def _room_locked(self) -> int:
        """Make sure the newest chunk has room; returns how many samples it still takes."""
        if not self._ts_chunks or len(self._ts_chunks[-1]) >= self._cs:
            self._ts_chunks.append(array("d"))
            self._val_chunks.append([array("d") for _ in self._channels])
            # Keep at least max_samples: drop the oldest chunk only when the other full
            # chunks still hold them, so at most max_samples + 2 x chunk_size are kept.
            while (len(self._ts_chunks) - 2) * self._cs >= self.max_samples:
                del self._ts_chunks[0]
                del self._val_chunks[0]
                self._first_index += self._cs
        return self._cs - len(self._ts_chunks[-1])

    def _store_columns_locked(self, ts: Sequence[float], cols: Sequence[Sequence[float]]) -> None:
        """Store readings given as columns (one per channel), as many _store_locked."""
        n, i = len(ts), 0
        while i < n:
            j = min(n, i + self._room_locked())
            self._ts_chunks[-1].extend(ts[i:j])
            for arr, col in zip(self._val_chunks[-1], cols, strict=True):
                arr.extend(col[i:j])
            i = j
        self._count += n
        self._attempts += n
        self._last_t = ts[-1]

    def _store_locked(self, t: float, vals: Sequence[float]) -> None:
        self._room_locked()
        self._ts_chunks[-1].append(t)
        for arr, v in zip(self._val_chunks[-1], vals, strict=True):
            arr.append(v)
        self._count += 1
        self._attempts += 1
        self._last_t = t

    def _count_error_locked(self, reason: str, text: str) -> None:
        """A reading that failed as a whole: nothing stored, every channel failed."""
        self._errors[reason] = self._errors.get(reason, 0) + 1
        for errors in self._channel_errors:
            errors[reason] = errors.get(reason, 0) + 1
        self._attempts += 1
        self._failed += 1
        self.last_error = text

    def _store_partial_locked(self, t: float, exc: PartialReading) -> None:
        """A reading whose failed channels are NaN: count them, keep the others."""
        for name, reason in exc.failures:
            errors = self._channel_errors[self._channel_pos[name]]
            errors[reason] = errors.get(reason, 0) + 1
        for reason in {reason for _, reason in exc.failures}:
            self._errors[reason] = self._errors.get(reason, 0) + 1
        self.last_error = str(exc)
        if exc.all_failed:
            self._attempts += 1
            self._failed += 1
        else:
            self._store_locked(t, exc.values)

    def _count_error(self, reason: str, text: str) -> None:
        with self._lock:
            self._flush_locked()
            self._count_error_locked(reason, text)

    def _decode_generic(self, vals: Sequence[float]) -> Sequence[float]:
        if len(vals) != len(self._channels):
            raise ReadError(
                f"{len(vals)} values for {len(self._channels)} channels {self._channels}",
                "wrong_length",
            )
        return vals

    def _drain_locked(self) -> None:
        """Move the native reader's readings into the pending list; the caller holds the
        lock (one consumer at a time)."""
        psrc, ring = self._psrc, self._ring
        assert psrc is not None and ring is not None
        readings = ring.drain()
        if not readings:
            return
        if not self._pending and self._flag_after == math.inf and self._decode is not None:
            # The common case, nothing failed: decode and store the batch by columns.
            decode_columns = getattr(psrc, "decode_columns", None)
            if decode_columns is not None and not any(failed for _, _, failed in readings):
                cols = decode_columns([cast("tuple[bytes, ...]", r[1]) for r in readings])
                if cols is not None:
                    self._store_columns_locked([r[0] for r in readings], cols)
                    return
        append = self._pending.append
        for t, texts, failed in readings:
            raw: tuple[bytes | FailedFile, ...]
            if not failed:
                raw = cast("tuple[bytes, ...]", texts)
            else:  # an errno where a pread failed
                raw = tuple(
                    FailedFile(psrc.read_failed(k, OSError(x, os.strerror(x))).reason)
                    if isinstance(x, int)
                    else x
                    for k, x in enumerate(texts)
                )
            if t >= self._flag_after:
                raw = mark_vanished(raw, self._flag_positions)
                self._flag_positions, self._flag_after = (), math.inf
            append((t, raw))

    def _flush_locked(self) -> None:
        """Decode and store every pending reading; the caller holds the lock."""
        if self._ring is not None:
            self._drain_locked()
        pending, decode = self._pending, self._decode
        n = len(pending)
        if not n or decode is None:
            return
        batch = pending[:n]
        del pending[:n]  # one list operation: a reading appended meanwhile stays pending
        for t, raw in batch:
            try:
                vals = decode(raw)
            except PartialReading as exc:
                self._store_partial_locked(t, exc)
            except ReadError as exc:
                self._count_error_locked(exc.reason, str(exc))
            except Exception as exc:  # a broken source must not kill the sampler silently
                self._count_error_locked(f"unexpected:{type(exc).__name__}", repr(exc))
            else:
                self._store_locked(t, vals)
        self._cond.notify_all()

    def _flush(self) -> None:
        with self._cond:
            self._flush_locked()

    def _maintain(
        self, src: PreadSource, flag_after: float | None = None
    ) -> tuple[int, ...] | None:
        """Decode what is pending, then the source's upkeep: the plan positions to fail as
        ``vanished`` in this slot's reading, or None when upkeep broke (slot dropped).

        ``flag_after`` (native reader): the flagged positions fail in the first reading
        stamped at or after it instead."""
        with self._cond:
            self._flush_locked()  # before upkeep changes how readings decode
            try:
                flagged = src.maintain()
                if flagged and flag_after is not None:
                    self._flag_positions = tuple(sorted({*self._flag_positions, *flagged}))
                    self._flag_after = min(self._flag_after, flag_after)
                return flagged
            except ReadError as exc:
                self._count_error_locked(exc.reason, str(exc))
            except Exception as exc:
                self._count_error_locked(f"unexpected:{type(exc).__name__}", repr(exc))
        return None

    def _run(self) -> None:
        if self._ring is not None:
            self._run_native()
            return
        src = self._source
        psrc = self._psrc
        read = src.read
        if psrc is not None:
            plan = psrc.pread_plan()
            fds, pread = plan.fds, plan.pread
            sizes, offsets = (plan.size,) * len(fds), (0,) * len(fds)
            maintain_every = plan.maintain_interval_s
            failed = psrc.read_failed
            self._decode = psrc.decode
        else:
            self._decode = self._decode_generic
        pending = self._pending
        append = pending.append
        flush_every = self._flush_every
        monotonic = time.monotonic
        thread_time = time.thread_time
        sleep = time.sleep
        interval = self.interval_s
        try:  # the thread's CPU clock, read by others: no syscall per sample here
            self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):
            self._cpu_clock = None
        track_cpu_here = self._cpu_clock is None
        t_start = due = next_maintain = monotonic()
        k = 0
        while not self._stopping:
            raw: Sequence[bytes | FailedFile] | Sequence[float] | None = None
            try:
                if psrc is None:
                    raw = read()
                else:
                    flagged: tuple[int, ...] | None = ()
                    if due >= next_maintain:
                        next_maintain = due + maintain_every
                        flagged = self._maintain(psrc)  # None: this slot is dropped
                    if flagged is not None:
                        try:
                            raw = tuple(map(pread, fds, sizes, offsets))
                        except OSError:  # read file by file: only the failed ones fail
                            raw = pread_each(fds, plan.size, pread, failed)
                        if flagged:
                            raw = mark_vanished(raw, flagged)
            except ReadError as exc:
                self._count_error(exc.reason, str(exc))
            except Exception as exc:  # a broken source must not kill the sampler silently
                self._count_error(f"unexpected:{type(exc).__name__}", repr(exc))
            if raw is not None:
                append((monotonic(), raw))
                if len(pending) >= flush_every or self._waiting:
                    self._flush()
            if track_cpu_here:
                self._cpu_s = thread_time()
            k += 1
            now = monotonic()
            due = t_start + k * interval
            if due <= now:
                behind = int((now - t_start) / interval) + 1
                self._missed += behind - k
                k = behind
                due = t_start + k * interval
            # time.sleep costs about half the CPU of Event.wait per wake-up and never
            # returns early; long intervals sleep in slices so that stop() stays prompt.
            delay = due - now
            while delay > MAX_SLEEP_S and not self._stopping:
                sleep(MAX_SLEEP_S)
                delay = due - monotonic()
            if delay > 0.0 and not self._stopping:  # stopped: not the rest of a long wait
                sleep(delay)
        self._flush()
        self._cpu_s = thread_time()

    def _run_native(self) -> None:
        """The Python side of the native reader: upkeep, draining and decoding."""
        psrc, ring = self._psrc, self._ring
        assert psrc is not None and ring is not None
        plan = psrc.pread_plan()
        self._decode = psrc.decode
        maintain_every = max(plan.maintain_interval_s, self.interval_s)
        flush_every = max(NATIVE_FLUSH_PERIOD_S, maintain_every, self.interval_s)
        monotonic = time.monotonic
        self._maintain_native(psrc)
        ring.start()
        next_maintain = monotonic() + maintain_every
        try:
            while not self._stopping:
                now = monotonic()
                if now >= next_maintain:
                    next_maintain = now + maintain_every
                    self._maintain_native(psrc)
                else:
                    self._flush()
                with self._cond:
                    if not self._stopping:
                        self._cond.wait(min(flush_every, max(next_maintain - monotonic(), 0.0)))
        finally:
            ring.stop()
            self._flush()
            self._cpu_s = time.thread_time()

    def _maintain_native(self, src: PreadSource) -> None:
        """Upkeep beside the native reader: the flagged files fail as ``vanished`` in the
        first reading taken after upkeep began."""
        self._maintain(src, flag_after=time.monotonic())

    # ---- readers ---------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Samples taken since start (the global index of the next sample)."""
        with self._lock:
            self._flush_locked()
            return self._count

    @property
    def first_index(self) -> int:
        """Global index of the oldest retained sample."""
        with self._lock:
            self._flush_locked()
            return self._first_index

    @property
    def cpu_s(self) -> float:
        """CPU time the sampler thread has used so far, s."""
        return self._cpu_now()

    def _cpu_now(self) -> float:
        """The Python thread's CPU time, plus the native reader thread's."""
        native = 0.0 if self._ring is None else float(self._ring.cpu_s())
        clock, thread = self._cpu_clock, self._thread
        if clock is not None and thread is not None and thread.is_alive():
            try:
                return time.clock_gettime(clock) + native
            except OSError:  # the thread ended just now: its final figure is in _cpu_s
                pass
        return self._cpu_s + native

    def _missed_now(self) -> int:
        if self._ring is None:
            return self._missed
        return int(self._ring.missed) + int(self._ring.overflowed)

    @property
    def last_time(self) -> float | None:
        """Timestamp of the newest sample, None before the first."""
        with self._lock:
            self._flush_locked()
            t = self._last_t
        return None if t == -math.inf else t

    def counters(self) -> Counters:
        """A consistent copy of the cumulative counters."""
        with self._lock:
            self._flush_locked()
            return Counters(
                attempts=self._attempts,
                samples=self._count,
                errors=dict(self._errors),
                cpu_s=self._cpu_now(),
                missed_slots=self._missed_now(),
                channel_errors=tuple(dict(e) for e in self._channel_errors),
                failed=self._failed,
            )

    def read_edge(self) -> EdgeReading | None:
        """One reading of every channel now, in the caller's thread, outside the stream:
        a window's edge. None unless the source is a PreadSource (another source's
        ``read`` may block or keep state the thread owns). The source must be open."""
        src = self._psrc
        if src is None:
            return None
        plan = src.pread_plan()
        fds = plan.fds
        try:
            raw: tuple[bytes | FailedFile, ...] = tuple(
                map(plan.pread, fds, (plan.size,) * len(fds), (0,) * len(fds))
            )
        except OSError:
            raw = pread_each(fds, plan.size, plan.pread, src.read_failed)
        t = time.monotonic()
        try:
            return EdgeReading(t, tuple(src.decode(raw)))
        except PartialReading as exc:
            return EdgeReading(t, tuple(exc.values), tuple(exc.failures))
        except ReadError as exc:
            reason = exc.reason
        except Exception as exc:  # as in the thread: counted, never raised into the test
            reason = f"unexpected:{type(exc).__name__}"
        n = len(self._channels)
        return EdgeReading(t, (math.nan,) * n, tuple((name, reason) for name in self._channels))

    def channel_errors(self) -> dict[str, dict[str, int]]:
        """Failed reads so far per channel, by reason (channels without any left out)."""
        with self._lock:
            self._flush_locked()
            return {
                name: dict(errors)
                for name, errors in zip(self._channels, self._channel_errors, strict=True)
                if errors
            }

    def errors(self) -> dict[str, int]:
        """Failed reads so far, by reason."""
        with self._lock:
            self._flush_locked()
            return dict(self._errors)

    def wait_for_sample_after(self, t: float, timeout_s: float) -> bool:
        """Block until a sample stamped at or after ``t`` exists; False on timeout/stop."""
        return self._wait(lambda: self._last_t >= t, timeout_s)

    def wait_for_samples(self, count: int, timeout_s: float) -> bool:
        """Block until at least ``count`` samples were taken in total; False on timeout."""
        return self._wait(lambda: self._count >= count, timeout_s)

    def _wait(self, done: Callable[[], bool], timeout_s: float) -> bool:
        def ready() -> bool:
            self._flush_locked()
            return done() or (self._stopping and not self.running)

        with self._cond:
            self._waiting += 1  # the thread then decodes each reading at once
            try:
                if self._ring is None:
                    return self._cond.wait_for(ready, timeout_s) and done()
                # The native reader notifies nobody: look at its ring every interval (at
                # most MAX_SLEEP_S: its first reading, due at once, may land just after a
                # look, and a 60 s interval then kept start() waiting 60 s for it).
                deadline = time.monotonic() + timeout_s
                while not ready():
                    left = deadline - time.monotonic()
                    if left <= 0.0:
                        return False
                    self._cond.wait(min(left, self.interval_s, MAX_SLEEP_S))
                return done()
            finally:
                self._waiting -= 1

    def slice_between(self, t0: float, t1: float, *, pad: int = 1) -> SampleSlice:
        """Copy of the samples with ``t0 <= ts <= t1`` plus ``pad`` samples on each side."""
        with self._lock:
            self._flush_locked()
            size = self._count - self._first_index
            view = _TimeView(self._ts_chunks, size, self._cs)
            i = max(bisect_left(view, t0) - pad, 0)
            j = min(bisect_right(view, t1) + pad, size)
            return self._copy(i, j)

    def slice_index(self, start: int, stop: int | None = None) -> SampleSlice:
        """Copy of samples by global index ``[start, stop)``, clipped to what is retained."""
        with self._lock:
            self._flush_locked()
            lo = max(start, self._first_index) - self._first_index
            hi_g = self._count if stop is None else min(stop, self._count)
            hi = max(hi_g - self._first_index, lo)
            return self._copy(lo, hi)

    def _copy(self, i: int, j: int) -> SampleSlice:
        """Copy retained positions ``[i, j)``; caller holds the lock."""
        ts: array[float] = array("d")
        vals = tuple(array("d") for _ in self._channels)
        cs = self._cs
        pos = i
        while pos < j:
            c, off = divmod(pos, cs)
            end = min(j - c * cs, cs)
            ts.extend(self._ts_chunks[c][off:end])
            for dst, src in zip(vals, self._val_chunks[c], strict=True):
                dst.extend(src[off:end])
            pos = c * cs + end
        return SampleSlice(start_index=self._first_index + i, ts=ts, values=vals)
