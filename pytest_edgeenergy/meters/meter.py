"""The meter: a sampler over one source, energy windows and the idle baseline.

Typical use::

    with Meter(source, interval_s=0.01) as meter:
        meter.measure_idle(1.0)
        with meter.window("resnet18-bs16") as w:
            run_workload()
        print(w.result.total.energy_j, w.result.net_energy_j)

Windows may overlap (each keeps its own start time and counter snapshot). Over a
PreadSource (the INA rails) ``begin()`` and ``end()`` each take one synchronous reading of
every rail, timestamped, as the window's edges: a window costs at most one read at each edge
whatever the sampling interval, and never waits for the sampler. A window whose edges were
stamped by someone else (a measured command's marks) is made after the fact by
:meth:`Meter.window_between`, its edges interpolated between the samples around them.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .compute import WindowContext, WindowRules, compute_result
from .sampler import DEFAULT_RETAIN_S, Counters, EdgeReading, Sampler
from .source import PowerSource
from .window import IdleBaseline, RailEnergy, TotalEnergy, Window, WindowResult

__all__ = ["IdleBaseline", "Meter", "RailEnergy", "TotalEnergy", "Window", "WindowResult"]

END_WAIT_INTERVALS = 2.0
END_WAIT_MARGIN_S = 0.02
"""Slack for a loaded 2-core board where the sampler thread is scheduled late."""


def _sum_channels(source: PowerSource) -> tuple[str, ...] | None:
    """The optional ``sum_channels`` a source may declare (see WindowContext)."""
    declared = getattr(source, "sum_channels", None)
    if declared is None:
        return None
    names = tuple(str(n) for n in declared)
    unknown = [n for n in names if n not in source.channels]
    if unknown:
        raise ValueError(
            f"source {source.name}: sum_channels {unknown} are not among its channels "
            f"{list(source.channels)}"
        )
    return names


class Meter:
    """Energy windows over ``source`` sampled every ``interval_s``.

    The meter owns ``source``: :meth:`close` stops the sampler and closes the source.
    """

    def __init__(
        self,
        source: PowerSource,
        *,
        interval_s: float = 0.01,
        min_window_s: float | None = None,
        min_samples: int = 5,
        max_error_fraction: float = 0.2,
        retain_s: float = DEFAULT_RETAIN_S,
        max_samples: int | None = None,
    ) -> None:
        """Validate the rules and build the sampler (started on first use or :meth:`start`).

        The minimum window duration is ``max(min_window_s, 3 x sensor period,
        3 x sampling interval)``.
        """
        if isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 1:
            raise ValueError(f"min_samples must be an integer >= 1, got {min_samples!r}")
        if not (math.isfinite(max_error_fraction) and 0.0 <= max_error_fraction <= 1.0):
            raise ValueError(f"max_error_fraction must be within 0..1, got {max_error_fraction!r}")
        if min_window_s is not None and not (math.isfinite(min_window_s) and min_window_s >= 0):
            raise ValueError(f"min_window_s must be a finite number >= 0 s, got {min_window_s!r}")
        self._source = source
        self.sampler = Sampler(
            source, interval_s=interval_s, retain_s=retain_s, max_samples=max_samples
        )
        sensor_s = source.min_interval_s or 0.0
        candidates = [
            (3.0 * self.sampler.interval_s, f"3 x sampling interval {self.sampler.interval_s:g} s"),
            (3.0 * sensor_s, f"3 x sensor period {sensor_s:g} s"),
        ]
        if min_window_s is not None:
            candidates.append((float(min_window_s), f"min_window_s {min_window_s:g} s"))
        min_s, why = max(candidates, key=lambda c: c[0])
        self.rules = WindowRules(
            min_samples=min_samples,
            min_duration_s=min_s,
            min_duration_why=why,
            max_error_fraction=float(max_error_fraction),
        )
        self._ctx = WindowContext(
            channels=tuple(source.channels),
            quantity=source.quantity,
            total_channel=source.total_channel,
            total_method=source.total_method,
            source=source.name,
            simulated=source.simulated,
            interval_s=self.sampler.interval_s,
            interval_clamp_reason=self.sampler.clamp_reason,
            sampler=self.sampler.kind,
            sum_channels=_sum_channels(source),
        )
        self._idle: IdleBaseline | None = None
        self._closed = False

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def source(self) -> PowerSource:
        return self._source

    @property
    def interval_s(self) -> float:
        """Effective sampling interval (after clamping to the sensor period), s."""
        return self.sampler.interval_s

    @property
    def min_duration_s(self) -> float:
        return self.rules.min_duration_s

    def start(self) -> None:
        """Start sampling and wait (bounded) for the first sample."""
        if self._closed:
            raise RuntimeError("meter is closed")
        if self.sampler.stopped:
            raise RuntimeError("meter was stopped; create a new Meter")
        if not self.sampler.running:
            self.sampler.start()
        self.sampler.wait_for_samples(1, self._edge_wait_s())

    def stop(self) -> None:
        """Stop sampling; the source stays open (see :meth:`close`). Windows can still end."""
        self.sampler.stop()

    def close(self) -> None:
        """Stop the sampler and close the source. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.sampler.stop()
        self._source.close()

    def __enter__(self) -> Meter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _edge_wait_s(self) -> float:
        return END_WAIT_INTERVALS * self.sampler.interval_s + END_WAIT_MARGIN_S

    # ---- idle baseline ---------------------------------------------------------------
    @property
    def idle(self) -> IdleBaseline | None:
        """The idle baseline windows subtract (None until a valid one is measured or set)."""
        return self._idle

    @idle.setter
    def idle(self, baseline: IdleBaseline | None) -> None:
        if baseline is not None and not baseline.valid:
            raise ValueError(
                f"refusing an invalid idle baseline: {baseline.invalid_reason or 'not valid'}"
            )
        self._idle = baseline

    def measure_idle(self, seconds: float = 1.0) -> IdleBaseline:
        """Measure idle power for ``seconds``; sets :attr:`idle` when the result is valid."""
        result = self.measure(seconds, label="idle")
        baseline = IdleBaseline(
            power_w=result.total.mean_w_estimate,
            rails_w={  # a rail invalid on its own has no idle figure to subtract
                name: r.mean_w_estimate
                for name, r in result.rails.items()
                if r.mean_w_estimate is not None and name not in result.invalid_rails
            },
            samples=result.samples,
            valid=result.valid and result.total.mean_w_estimate is not None,
            invalid_reason=result.invalid_reason,
            duration_s=result.duration_s,
            spread_w=self._total_spread_w(result),
        )
        if baseline.valid:
            self._idle = baseline
        return baseline

    def _total_spread_w(self, result: WindowResult) -> float | None:
        """Population stdev of the total power over the samples of ``result``, W; None for
        a counter source (energy, not power, per sample) or fewer than two samples."""
        ctx = self._ctx
        if ctx.quantity != "power_w":
            return None
        if ctx.total_method == "rail" and ctx.total_channel is not None:
            wanted = {ctx.total_channel}
        else:
            wanted = set(ctx.sum_channels if ctx.sum_channels is not None else ctx.channels)
        columns = [c for c, name in enumerate(ctx.channels) if name in wanted]
        data = self.sampler.slice_between(result.start_s, result.end_s, pad=0)
        totals = [
            sum(vals)
            for vals in zip(*(data.values[c] for c in columns), strict=True)
            if all(math.isfinite(v) for v in vals)
        ]
        return statistics.pstdev(totals) if len(totals) >= 2 else None

    # ---- windows ---------------------------------------------------------------------
    def begin(self, label: str = "window") -> Window:
        """Open a window now: its start is the edge reading's stamp, else the clock's
        (after at least one sample exists, so its start has data)."""
        self.start()
        begin = self.sampler.counters()
        edge = self._read_edge()
        t0 = edge.t if edge is not None else time.monotonic()
        return Window(self, label, t0, begin, begin.samples, edge)

    def _read_edge(self) -> EdgeReading | None:
        # After close() the descriptors may be reused by other files: never read them.
        return None if self._closed else self.sampler.read_edge()

    @contextmanager
    def window(self, label: str = "window") -> Iterator[Window]:
        """``with meter.window("x") as w: ...`` then ``w.result``."""
        w = self.begin(label)
        try:
            yield w
        finally:
            w.end()

    def measure(self, seconds: float, *, label: str = "measure") -> WindowResult:
        """One window of ``seconds`` of wall time (the ``edgeenergy measure`` command)."""
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
        w = self.begin(label)
        time.sleep(seconds)
        return w.end()

    def window_between(
        self,
        label: str,
        t0: float,
        t1: float,
        *,
        begin: Counters | None = None,
        end: Counters | None = None,
    ) -> WindowResult:
        """The window ``[t0, t1]`` (``time.monotonic()`` seconds, stamped by someone else:
        a measured command's own marks), computed after the fact from the retained samples.

        No edge reading exists for a past instant: each edge's value is interpolated on the
        line between the samples around it (:mod:`.integrate`), so waits (bounded) for a
        sample after ``t1``. ``begin``/``end``: the sampler's counters taken as close to the
        edges as the caller could (reads, read errors, sampler CPU and missed slots count
        between them; default: now, so without ``begin`` none are counted; the samples,
        their gaps and the validity rules on them always are).
        :class:`ValueError` for edges that are not finite, reversed, in the future or
        before the sampler's first sample."""
        if not (math.isfinite(t0) and math.isfinite(t1)):
            raise ValueError(f"window {label!r}: edges must be finite, got {t0!r}, {t1!r}")
        if t1 < t0:
            raise ValueError(f"window {label!r}: end {t1!r} is before its start {t0!r}")
        if t1 > time.monotonic():
            raise ValueError(f"window {label!r}: end {t1!r} is in the future")
        self.start()
        self.sampler.wait_for_sample_after(t1, self._edge_wait_s())
        now = self.sampler.counters()
        data = self.sampler.slice_between(t0, t1, pad=1)
        starts_late = len(data) == 0 or data.ts[0] > t0
        if starts_late and data.start_index == 0:
            raise ValueError(
                f"window {label!r}: starts at {t0!r}, before the sampler's first sample"
            )
        return compute_result(
            label=label,
            t0=t0,
            t1=t1,
            data=data,
            begin=begin if begin is not None else now,
            end=end if end is not None else now,
            ctx=self._ctx,
            rules=self.rules,
            idle=self._idle,
            evicted=starts_late,  # the samples before t0 were dropped already
        )

    def finish_window(self, window: Window) -> WindowResult:
        """End ``window`` now with an edge reading, or else by waiting for a sample after its
        end; then compute its result."""
        edge = self._read_edge()
        if edge is not None:
            t1 = edge.t
        else:
            t1 = time.monotonic()
            self.sampler.wait_for_sample_after(t1, self._edge_wait_s())
        end = self.sampler.counters()
        data = self.sampler.slice_between(window.start_s, t1, pad=1)
        # The sample just before the start (index begin_index - 1) must still be retained.
        evicted = self.sampler.first_index > max(window.begin_index - 1, 0)
        return compute_result(
            label=window.label,
            t0=window.start_s,
            t1=t1,
            data=data,
            begin=window.begin_counters,
            end=end,
            ctx=self._ctx,
            rules=self.rules,
            idle=self._idle,
            evicted=evicted,
            edges=(window.begin_edge, edge),
        )
