"""Energy windows: the result of one measured interval (computed by :mod:`.compute`).

Validity is per rail. A rail is INVALID (``valid=False``, ``invalid_reason`` names each
broken rule with its numbers) when the window holds fewer than ``min_samples`` readings, is
shorter than the minimum duration (``max(min_window_s, 3 x sensor period, 3 x sampling
interval)``) or its oldest samples were already dropped by the sampler's memory bound, or
when the rail itself lost more than ``max_error_fraction`` of its reads. The window's
``valid`` is its total's: the total rail's, or every summed rail's for a sum of rails.

Invalid figures are never reported as if they were measurements: the headline fields
``energy_j``, ``mean_w`` and ``net_energy_j`` are None (null in JSON) while the computed
values stay available in ``energy_j_estimate`` and ``mean_w_estimate`` (None only when the
rail has no reading at all). ``peak_w`` is the largest observed value either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..board.types import TotalMethod
from .sampler import Counters, EdgeReading
from .source import Quantity


@dataclass(frozen=True)
class IdleBaseline:
    """Idle power at the current operating point, measured by :meth:`Meter.measure_idle`."""

    power_w: float | None
    """Total idle power (the total rail, or the sum of rails), W; estimate when invalid."""
    rails_w: dict[str, float]
    """Idle power per rail, W."""
    samples: int
    valid: bool
    invalid_reason: str | None = None
    duration_s: float = 0.0
    spread_w: float | None = None
    """Population standard deviation of the total power over the idle samples, W (None for
    a counter source or fewer than two samples): a large one says the board was not idle."""

    def to_json(self) -> dict[str, Any]:
        return {
            "power_w": _num(self.power_w),
            "rails_w": {k: _num(v) for k, v in self.rails_w.items()},
            "samples": self.samples,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "seconds": _num(self.duration_s),
            "spread_w": _num(self.spread_w),
        }


@dataclass(frozen=True)
class RailEnergy:
    """Energy of one channel over a window."""

    energy_j: float | None
    """Gross energy, J; None when invalid (see ``energy_j_estimate``)."""
    mean_w: float | None
    peak_w: float | None
    energy_j_estimate: float | None = None
    mean_w_estimate: float | None = None
    idle_w: float | None = None
    idle_energy_j: float | None = None
    net_energy_j: float | None = None
    """Gross minus idle energy, J; None when invalid or without an idle baseline."""
    valid: bool = True
    invalid_reason: str | None = None
    samples: int | None = None
    """Readings of this rail in the window (its failed reads not counted); None for a total."""
    read_errors: dict[str, int] | None = None
    """This rail's failed reads in the window, by reason; None for a total."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "energy_j": _num(self.energy_j),
            "mean_w": _num(self.mean_w),
            "peak_w": _num(self.peak_w),
            "energy_j_estimate": _num(self.energy_j_estimate),
            "mean_w_estimate": _num(self.mean_w_estimate),
            "idle_w": _num(self.idle_w),
            "idle_energy_j": _num(self.idle_energy_j),
            "net_energy_j": _num(self.net_energy_j),
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
        }
        if self.samples is not None:
            out["samples"] = self.samples
        if self.read_errors is not None:
            out["read_errors"] = dict(self.read_errors)
        return out


@dataclass(frozen=True)
class TotalEnergy(RailEnergy):
    """Whole-board energy: the total rail (``method="rail"``) or the sum of all rails."""

    method: TotalMethod = "sum"
    rail: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["method"] = self.method
        out["rail"] = self.rail
        return out


@dataclass(frozen=True)
class WindowResult:
    """Everything measured over one window; ``to_json`` is the ``measure --json`` shape."""

    label: str
    start_s: float
    """``time.monotonic()`` at the start of the window."""
    end_s: float
    duration_s: float
    samples: int
    """Readings stamped inside ``[start_s, end_s]`` with at least one rail read, the edge
    readings included."""
    interval_ms_mean: float | None
    interval_ms_jitter: float | None
    """Population standard deviation of the sample intervals, ms."""
    read_errors: dict[str, int]
    """Readings with a failed read, by reason (per rail: ``rails[NAME].read_errors``)."""
    sampler_cpu_s: float
    """CPU time the sampler thread used during the window, s."""
    rails: dict[str, RailEnergy]
    total: TotalEnergy
    valid: bool
    invalid_reason: str | None
    simulated: bool
    idle_w: float | None = None
    idle_energy_j: float | None = None
    net_energy_j: float | None = None
    source: str = ""
    quantity: Quantity = "power_w"
    interval_ms_target: float | None = None
    interval_clamp_reason: str | None = None
    reads: int = 0
    """Read attempts during the window (samples kept + failed reads)."""
    missed_slots: int = 0
    """Sampling slots skipped because a read overran its period."""
    min_duration_s: float = 0.0
    invalid_rails: dict[str, str] = field(default_factory=dict)
    """Rails invalid on their own (their read errors), with why; the others and the total
    may still be valid."""
    edge_readings: int = 0
    """Synchronous readings taken at the window's edges (0 when the source offers none)."""
    sampler: str = ""
    """Which sampler read the source: ``native`` (C reader thread) or ``python``."""

    def to_json(self) -> dict[str, Any]:
        """The ``measure --json`` contract plus extra keys (peaks, jitter, idle/net)."""
        return {
            "label": self.label,
            "seconds": _num(self.duration_s),
            "interval_ms": _num(self.interval_ms_mean),
            "interval_ms_jitter": _num(self.interval_ms_jitter),
            "interval_ms_target": _num(self.interval_ms_target),
            "interval_clamp_reason": self.interval_clamp_reason,
            "samples": self.samples,
            "reads": self.reads,
            "edge_readings": self.edge_readings,
            "missed_slots": self.missed_slots,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "invalid_rails": dict(self.invalid_rails),
            "read_errors": dict(self.read_errors),
            "sampler_cpu_s": _num(self.sampler_cpu_s),
            "source": self.source,
            "sampler": self.sampler,
            "quantity": self.quantity,
            "simulated": self.simulated,
            "min_seconds": _num(self.min_duration_s),
            "rails": {name: r.to_json() for name, r in self.rails.items()},
            "total": self.total.to_json(),
            "idle_w": _num(self.idle_w),
            "idle_energy_j": _num(self.idle_energy_j),
            "net_energy_j": _num(self.net_energy_j),
        }


def _num(x: float | None) -> float | None:
    """JSON-safe float: NaN and infinities become None."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


class WindowOwner(Protocol):
    """What a window needs of its meter (:class:`~.meter.Meter`): to end it."""

    def finish_window(self, window: Window) -> WindowResult: ...


class Window:
    """An open measurement window; :meth:`end` closes it and returns its result."""

    def __init__(
        self,
        meter: WindowOwner,
        label: str,
        t0: float,
        begin: Counters,
        index: int,
        edge: EdgeReading | None = None,
    ) -> None:
        self.label = label
        self.start_s = t0
        self._meter = meter
        self._begin = begin
        self._index = index
        self._edge = edge
        self._result: WindowResult | None = None

    @property
    def begin_edge(self) -> EdgeReading | None:
        """The reading taken at the start (stamped ``start_s``); None when not taken."""
        return self._edge

    @property
    def begin_counters(self) -> Counters:
        return self._begin

    @property
    def begin_index(self) -> int:
        """Sampler's global sample index when the window opened."""
        return self._index

    @property
    def ended(self) -> bool:
        return self._result is not None

    @property
    def result(self) -> WindowResult:
        """The result; raises RuntimeError while the window is still open."""
        if self._result is None:
            raise RuntimeError(f"window {self.label!r} has not ended yet; call end() first")
        return self._result

    def end(self) -> WindowResult:
        """Close the window (once; later calls return the same result)."""
        if self._result is None:
            self._result = self._meter.finish_window(self)
        return self._result

    def __enter__(self) -> Window:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()
