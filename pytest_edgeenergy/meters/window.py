"""Energy windows: the result of one measured interval and the rules that make it valid.

A window is INVALID (``valid=False``, ``invalid_reason`` names each broken rule with its
numbers) when it holds fewer than ``min_samples`` samples, is shorter than the minimum
duration (``max(min_window_s, 3 x sensor period, 3 x sampling interval)``), lost more than
``max_error_fraction`` of its reads, or its oldest samples were already dropped by the
sampler's memory bound.

Invalid windows never report a number as if it were a measurement: the headline fields
``energy_j``, ``mean_w`` and ``net_energy_j`` are None (null in JSON) while the computed
values stay available in ``energy_j_estimate`` and ``mean_w_estimate`` (None only when the
window has no sample at all). ``peak_w`` is the largest observed value either way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..board.types import TotalMethod
from . import integrate
from .sampler import Counters, SampleSlice
from .source import Quantity

if TYPE_CHECKING:
    from .meter import Meter


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

    def to_json(self) -> dict[str, Any]:
        return {
            "power_w": _num(self.power_w),
            "rails_w": {k: _num(v) for k, v in self.rails_w.items()},
            "samples": self.samples,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "seconds": _num(self.duration_s),
        }


@dataclass(frozen=True)
class RailEnergy:
    """Energy of one channel over a window."""

    energy_j: float | None
    """Gross energy, J; None when the window is invalid (see ``energy_j_estimate``)."""
    mean_w: float | None
    peak_w: float | None
    energy_j_estimate: float | None = None
    mean_w_estimate: float | None = None
    idle_w: float | None = None
    idle_energy_j: float | None = None
    net_energy_j: float | None = None
    """Gross minus idle energy, J; None when invalid or without an idle baseline."""

    def to_json(self) -> dict[str, Any]:
        return {
            "energy_j": _num(self.energy_j),
            "mean_w": _num(self.mean_w),
            "peak_w": _num(self.peak_w),
            "energy_j_estimate": _num(self.energy_j_estimate),
            "mean_w_estimate": _num(self.mean_w_estimate),
            "idle_w": _num(self.idle_w),
            "idle_energy_j": _num(self.idle_energy_j),
            "net_energy_j": _num(self.net_energy_j),
        }


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
    """Samples stamped inside ``[start_s, end_s]``."""
    interval_ms_mean: float | None
    interval_ms_jitter: float | None
    """Population standard deviation of the sample intervals, ms."""
    read_errors: dict[str, int]
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
            "missed_slots": self.missed_slots,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "read_errors": dict(self.read_errors),
            "sampler_cpu_s": _num(self.sampler_cpu_s),
            "source": self.source,
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


@dataclass(frozen=True)
class WindowRules:
    """The validity rules of a meter."""

    min_samples: int
    min_duration_s: float
    min_duration_why: str
    max_error_fraction: float


@dataclass(frozen=True)
class WindowContext:
    """What a window result needs to know about its meter and source."""

    channels: tuple[str, ...]
    quantity: Quantity
    total_channel: str | None
    total_method: TotalMethod
    source: str
    simulated: bool
    interval_s: float
    interval_clamp_reason: str | None = None
    sum_channels: tuple[str, ...] | None = None
    """Channels whose sum is the total when there is no total channel; None = all. A source
    whose channels nest (RAPL ``core`` inside ``package-0``) names them as ``sum_channels``."""


def _channel_energy(
    quantity: Quantity, ts: Sequence[float], vals: Sequence[float], t0: float, t1: float
) -> tuple[float | None, float | None, float | None]:
    """(energy estimate J, mean W estimate, peak W) of one series; Nones when empty."""
    if len(ts) == 0:
        return None, None, None
    dur = t1 - t0
    if quantity == "energy_j":
        energy = integrate.counter_energy_between(ts, vals, t0, t1)
        peak = integrate.counter_peak_power_between(ts, vals, t0, t1) if dur > 0 else None
    else:
        energy = integrate.energy_between(ts, vals, t0, t1)
        peak = integrate.peak_between(ts, vals, t0, t1)
    mean = energy / dur if dur > 0 else None
    return energy, mean, peak


def _with_idle(
    energy: float | None,
    mean: float | None,
    peak: float | None,
    valid: bool,
    idle_w: float | None,
    duration_s: float,
) -> RailEnergy:
    idle_e = idle_w * duration_s if idle_w is not None else None
    gross = energy if valid else None
    net = gross - idle_e if gross is not None and idle_e is not None else None
    return RailEnergy(
        energy_j=gross,
        mean_w=mean if valid else None,
        peak_w=peak,
        energy_j_estimate=energy,
        mean_w_estimate=mean,
        idle_w=idle_w,
        idle_energy_j=idle_e,
        net_energy_j=net,
    )


def compute_result(
    *,
    label: str,
    t0: float,
    t1: float,
    data: SampleSlice,
    begin: Counters,
    end: Counters,
    ctx: WindowContext,
    rules: WindowRules,
    idle: IdleBaseline | None,
    evicted: bool = False,
) -> WindowResult:
    """Integrate ``data`` (samples around ``[t0, t1]``) and apply the validity rules."""
    ts = data.ts
    i, j = integrate.index_range(ts, t0, t1)
    samples = j - i
    interval_mean, interval_jitter = integrate.interval_stats(ts[i:j])
    duration = t1 - t0

    read_errors = {
        reason: n - begin.errors.get(reason, 0)
        for reason, n in end.errors.items()
        if n - begin.errors.get(reason, 0) > 0
    }
    n_errors = sum(read_errors.values())
    reads = end.attempts - begin.attempts

    reasons: list[str] = []
    if evicted:
        reasons.append("samples dropped: the window is longer than the sampler keeps in memory")
    if samples < rules.min_samples:
        reasons.append(f"too few samples: {samples} < min_samples {rules.min_samples}")
    if duration < rules.min_duration_s:
        reasons.append(
            f"window too short: {duration:.4g} s < minimum {rules.min_duration_s:.4g} s "
            f"({rules.min_duration_why})"
        )
    if reads > 0 and n_errors / reads > rules.max_error_fraction:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(read_errors.items()))
        reasons.append(
            f"too many read errors: {n_errors} of {reads} reads failed "
            f"({100.0 * n_errors / reads:.1f} % > {100.0 * rules.max_error_fraction:g} %; "
            f"{detail})"
        )
    valid = not reasons

    idle_ok = idle if idle is not None and idle.valid else None
    rails: dict[str, RailEnergy] = {}
    for c, name in enumerate(ctx.channels):
        e, m, p = _channel_energy(ctx.quantity, ts, data.values[c], t0, t1)
        idle_w = idle_ok.rails_w.get(name) if idle_ok is not None else None
        rails[name] = _with_idle(e, m, p, valid, idle_w, duration)

    idle_total = idle_ok.power_w if idle_ok is not None else None
    if ctx.total_method == "rail" and ctx.total_channel is not None:
        base = rails[ctx.total_channel]
        e_t, m_t, p_t = base.energy_j_estimate, base.mean_w_estimate, base.peak_w
    else:
        wanted = set(ctx.sum_channels if ctx.sum_channels is not None else ctx.channels)
        cols = [data.values[c] for c, name in enumerate(ctx.channels) if name in wanted]
        summed = [sum(col) for col in zip(*cols, strict=True)] if cols else []
        e_t, m_t, p_t = _channel_energy(ctx.quantity, ts, summed, t0, t1)
    tot = _with_idle(e_t, m_t, p_t, valid, idle_total, duration)
    total = TotalEnergy(
        energy_j=tot.energy_j,
        mean_w=tot.mean_w,
        peak_w=tot.peak_w,
        energy_j_estimate=tot.energy_j_estimate,
        mean_w_estimate=tot.mean_w_estimate,
        idle_w=tot.idle_w,
        idle_energy_j=tot.idle_energy_j,
        net_energy_j=tot.net_energy_j,
        method=ctx.total_method if ctx.total_channel is not None else "sum",
        rail=ctx.total_channel if ctx.total_method == "rail" else None,
    )

    return WindowResult(
        label=label,
        start_s=t0,
        end_s=t1,
        duration_s=duration,
        samples=samples,
        interval_ms_mean=None if interval_mean is None else interval_mean * 1e3,
        interval_ms_jitter=None if interval_jitter is None else interval_jitter * 1e3,
        read_errors=read_errors,
        sampler_cpu_s=max(end.cpu_s - begin.cpu_s, 0.0),
        rails=rails,
        total=total,
        valid=valid,
        invalid_reason="; ".join(reasons) if reasons else None,
        simulated=ctx.simulated,
        idle_w=total.idle_w,
        idle_energy_j=total.idle_energy_j,
        net_energy_j=total.net_energy_j,
        source=ctx.source,
        quantity=ctx.quantity,
        interval_ms_target=ctx.interval_s * 1e3,
        interval_clamp_reason=ctx.interval_clamp_reason,
        reads=reads,
        missed_slots=end.missed_slots - begin.missed_slots,
        min_duration_s=rules.min_duration_s,
    )


class Window:
    """An open measurement window; :meth:`end` closes it and returns its result."""

    def __init__(self, meter: Meter, label: str, t0: float, begin: Counters, index: int) -> None:
        self.label = label
        self.start_s = t0
        self._meter = meter
        self._begin = begin
        self._index = index
        self._result: WindowResult | None = None

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
