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

Thread safety: the sampler thread appends under a lock held for a few microseconds;
readers copy what they need under the same lock. The hot path is plain Python.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from .source import PowerSource, ReadError

DEFAULT_RETAIN_S = 7200.0
DEFAULT_MAX_SAMPLES = 720_000
DEFAULT_CHUNK_SIZE = 4096
MAX_SLEEP_S = 0.1
"""Longest single sleep of the sampler thread: how long stop() may wait for it."""


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
    samples: int
    errors: dict[str, int] = field(default_factory=dict)
    cpu_s: float = 0.0
    missed_slots: int = 0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


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
    ) -> None:
        """Validate and clamp the interval; nothing runs until :meth:`start`.

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
        self._missed = 0
        self._last_t = -math.inf
        self._cpu_s = 0.0
        self._cpu_clock: int | None = None
        self.last_error: str | None = None
        """Text of the most recent failed read, for diagnostics."""

        self._stop = threading.Event()
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
        return self._stop.is_set()

    def start(self) -> None:
        """Start the thread (once; a stopped sampler cannot be restarted)."""
        if self._thread is not None:
            if self._stop.is_set():
                raise RuntimeError("sampler was stopped; create a new Sampler")
            return
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

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and wait for it (the source is left open)."""
        self._stop.set()
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
    def _append(self, t: float, vals: Sequence[float]) -> None:
        with self._cond:
            if not self._ts_chunks or len(self._ts_chunks[-1]) >= self._cs:
                self._ts_chunks.append(array("d"))
                self._val_chunks.append([array("d") for _ in self._channels])
                # Keep at least max_samples: drop the oldest chunk only when the other full
                # chunks still hold them, so at most max_samples + 2 x chunk_size are kept.
                while (len(self._ts_chunks) - 2) * self._cs >= self.max_samples:
                    del self._ts_chunks[0]
                    del self._val_chunks[0]
                    self._first_index += self._cs
            self._ts_chunks[-1].append(t)
            for arr, v in zip(self._val_chunks[-1], vals, strict=True):
                arr.append(v)
            self._count += 1
            self._attempts += 1
            self._last_t = t
            self._cond.notify_all()

    def _count_error(self, reason: str, text: str) -> None:
        with self._lock:
            self._errors[reason] = self._errors.get(reason, 0) + 1
            self._attempts += 1
            self.last_error = text

    def _run(self) -> None:
        read = self._source.read
        monotonic = time.monotonic
        thread_time = time.thread_time
        sleep = time.sleep
        stop = self._stop
        interval = self.interval_s
        n = len(self._channels)
        t_start = monotonic()
        k = 0
        while not stop.is_set():
            try:
                vals = read()
                t = monotonic()
            except ReadError as exc:
                self._count_error(exc.reason, str(exc))
            except Exception as exc:  # a broken source must not kill the sampler silently
                self._count_error(f"unexpected:{type(exc).__name__}", repr(exc))
            else:
                if len(vals) == n:
                    self._append(t, vals)
                else:
                    self._count_error(
                        "wrong_length", f"{len(vals)} values for {n} channels {self._channels}"
                    )
            if self._cpu_clock is None:
                self._cpu_s = thread_time()
            k += 1
            now = monotonic()
            due = t_start + k * interval
            if due <= now:
                behind = int((now - t_start) / interval) + 1
                self._missed += behind - k
                k = behind
                due = t_start + k * interval
            # time.sleep costs about half the CPU of Event.wait per wake-up; sleeping in
            # slices of at most MAX_SLEEP_S keeps stop() prompt for long intervals.
            delay = due - now
            while delay > 0.0 and not stop.is_set():
                sleep(delay if delay < MAX_SLEEP_S else MAX_SLEEP_S)
                delay = due - monotonic()
        self._cpu_s = thread_time()

    # ---- readers ---------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Samples appended since start (the global index of the next sample)."""
        return self._count

    @property
    def first_index(self) -> int:
        """Global index of the oldest retained sample."""
        return self._first_index

    @property
    def cpu_s(self) -> float:
        """CPU time the sampler thread has used so far, s."""
        return self._cpu_now()

    def _cpu_now(self) -> float:
        clock, thread = self._cpu_clock, self._thread
        if clock is not None and thread is not None and thread.is_alive():
            try:
                return time.clock_gettime(clock)
            except OSError:  # the thread ended just now: its final figure is in _cpu_s
                pass
        return self._cpu_s

    @property
    def last_time(self) -> float | None:
        """Timestamp of the newest sample, None before the first."""
        t = self._last_t
        return None if t == -math.inf else t

    def counters(self) -> Counters:
        """A consistent copy of the cumulative counters."""
        with self._lock:
            return Counters(
                attempts=self._attempts,
                samples=self._count,
                errors=dict(self._errors),
                cpu_s=self._cpu_now(),
                missed_slots=self._missed,
            )

    def errors(self) -> dict[str, int]:
        """Failed reads so far, by reason."""
        with self._lock:
            return dict(self._errors)

    def wait_for_sample_after(self, t: float, timeout_s: float) -> bool:
        """Block until a sample stamped at or after ``t`` exists; False on timeout/stop."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._last_t >= t or (self._stop.is_set() and not self.running),
                timeout_s,
            ) and (self._last_t >= t)

    def wait_for_samples(self, count: int, timeout_s: float) -> bool:
        """Block until at least ``count`` samples were appended in total; False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._count >= count or (self._stop.is_set() and not self.running),
                timeout_s,
            ) and (self._count >= count)

    def slice_between(self, t0: float, t1: float, *, pad: int = 1) -> SampleSlice:
        """Copy of the samples with ``t0 <= ts <= t1`` plus ``pad`` samples on each side."""
        with self._lock:
            size = self._count - self._first_index
            view = _TimeView(self._ts_chunks, size, self._cs)
            i = max(bisect_left(view, t0) - pad, 0)
            j = min(bisect_right(view, t1) + pad, size)
            return self._copy(i, j)

    def slice_index(self, start: int, stop: int | None = None) -> SampleSlice:
        """Copy of samples by global index ``[start, stop)``, clipped to what is retained."""
        with self._lock:
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
