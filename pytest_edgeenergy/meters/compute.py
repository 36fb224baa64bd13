"""A window's result from its readings: per-rail series, validity per rail, the total.

Readings: the sampler's samples inside ``[t0, t1]`` and, for a PreadSource, the two edge
readings taken synchronously by ``begin()`` and ``end()``, stamped ``t0`` and ``t1``. With
an edge reading the integral starts (ends) exactly at the value read there, so samples
outside the window play no part and the edges do not depend on the sampling interval;
without one (another source, or a rail whose edge read failed) the edge value is
interpolated from the samples around it. A failed read (NaN) is left out of its rail's
series: the line bridges the gap.

Validity is per rail. Window rules hold for every rail: samples dropped by the memory
bound, fewer than ``min_samples`` readings, shorter than the minimum duration. Rail rules:
more than ``max_error_fraction`` of its reads failed, or fewer than ``min_samples`` values
of its own. The total is the total rail's validity (``method="rail"``); a sum of rails is
valid only when every summed rail is, never a sum that leaves a rail out. The window's
``valid``/``invalid_reason`` are the total's; rails failing alone are in ``invalid_rails``.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..board.types import TotalMethod
from . import integrate
from .sampler import Counters, EdgeReading, SampleSlice
from .source import Quantity
from .window import IdleBaseline, RailEnergy, TotalEnergy, WindowResult


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
    sampler: str = ""
    """``native`` or ``python`` (:attr:`.sampler.Sampler.kind`)."""
    sum_channels: tuple[str, ...] | None = None
    """Channels whose sum is the total when there is no total channel; None = all. A source
    whose channels nest (RAPL ``core`` inside ``package-0``) names them as ``sum_channels``."""


Edges = tuple[EdgeReading | None, EdgeReading | None]


def _edge_value(edge: EdgeReading | None, c: int) -> float | None:
    if edge is None or math.isnan(edge.values[c]):
        return None
    return edge.values[c]


def _valid_count(vals: Sequence[float]) -> int:
    if not math.isnan(sum(vals)):  # at C speed; NaN marks a failed read
        return len(vals)
    return sum(1 for v in vals if not math.isnan(v))


def _series(
    ts: array[float],
    vals: array[float],
    t0: float,
    t1: float,
    v0: float | None,
    v1: float | None,
) -> tuple[array[float], array[float]]:
    """The points a rail is integrated over: the edge readings at ``t0``/``t1`` where read
    (then no sample outside the window counts), its samples in between, NaNs left out."""
    lo = bisect_right(ts, t0) if v0 is not None else 0
    hi = bisect_left(ts, t1) if v1 is not None else len(ts)
    seg_t, seg_v = ts[lo:hi], vals[lo:hi]
    if math.isnan(sum(seg_v)):
        keep = [k for k, v in enumerate(seg_v) if not math.isnan(v)]
        seg_t = array("d", [seg_t[k] for k in keep])
        seg_v = array("d", [seg_v[k] for k in keep])
    if v0 is not None:
        seg_t = array("d", [t0]) + seg_t
        seg_v = array("d", [v0]) + seg_v
    if v1 is not None:
        seg_t.append(t1)
        seg_v.append(v1)
    return seg_t, seg_v


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


def _diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0) > 0}


def _add(counts: dict[str, int], reason: str) -> None:
    counts[reason] = counts.get(reason, 0) + 1


def _channel_errors(counters: Counters, c: int) -> dict[str, int]:
    errors = counters.channel_errors
    return errors[c] if c < len(errors) else {}


def error_text(errors: dict[str, int], reads: int) -> str:
    """``12 of 104 reads failed (garbage: 12)``."""
    detail = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))
    return f"{sum(errors.values())} of {reads} reads failed ({detail})"


def _rail_reasons(
    errors: dict[str, int], reads: int, samples: int, window_samples: int, rules: WindowRules
) -> list[str]:
    """Why one rail is invalid on its own (empty: the window's rules decide)."""
    n = sum(errors.values())
    if reads > 0 and n / reads > rules.max_error_fraction:
        return [
            f"too many read errors: {error_text(errors, reads)}, "
            f"{100.0 * n / reads:.1f} % > {100.0 * rules.max_error_fraction:g} %"
        ]
    if samples < rules.min_samples <= window_samples:
        return [f"too few samples of this rail: {samples} < min_samples {rules.min_samples}"]
    return []


def _energy_fields(
    figures: tuple[float | None, float | None, float | None],
    reasons: list[str],
    idle_w: float | None,
    duration_s: float,
) -> dict[str, Any]:
    """The fields of a RailEnergy: headline figures only when there is no reason."""
    energy, mean, peak = figures
    valid = not reasons
    idle_e = idle_w * duration_s if idle_w is not None else None
    gross = energy if valid else None
    net = gross - idle_e if gross is not None and idle_e is not None else None
    return {
        "energy_j": gross,
        "mean_w": mean if valid else None,
        "peak_w": peak,
        "energy_j_estimate": energy,
        "mean_w_estimate": mean,
        "idle_w": idle_w,
        "idle_energy_j": idle_e,
        "net_energy_j": net,
        "valid": valid,
        "invalid_reason": "; ".join(reasons) if reasons else None,
    }


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
    edges: Edges = (None, None),
) -> WindowResult:
    """Integrate ``data`` (samples around ``[t0, t1]``) and ``edges`` (readings at ``t0``
    and ``t1``, None where not taken) and apply the validity rules."""
    ts = data.ts
    i, j = integrate.index_range(ts, t0, t1)
    taken = [e for e in edges if e is not None]
    samples = j - i + sum(1 for e in taken if any(not math.isnan(v) for v in e.values))
    interval_mean, interval_jitter = integrate.interval_stats(ts[i:j])
    duration = t1 - t0
    reads = end.attempts - begin.attempts + len(taken)
    read_errors = _diff(end.errors, begin.errors)
    for e in taken:
        for reason in {reason for _, reason in e.failures}:
            _add(read_errors, reason)

    window_reasons: list[str] = []
    if evicted:
        window_reasons.append(
            "samples dropped: the window is longer than the sampler keeps in memory"
        )
    if samples < rules.min_samples:
        window_reasons.append(f"too few samples: {samples} < min_samples {rules.min_samples}")
    if duration < rules.min_duration_s:
        window_reasons.append(
            f"window too short: {duration:.4g} s < minimum {rules.min_duration_s:.4g} s "
            f"({rules.min_duration_why})"
        )

    idle_ok = idle if idle is not None and idle.valid else None
    rails: dict[str, RailEnergy] = {}
    own: dict[str, list[str]] = {}
    for c, name in enumerate(ctx.channels):
        errors = _diff(_channel_errors(end, c), _channel_errors(begin, c))
        for e in taken:
            for failed, reason in e.failures:
                if failed == name:
                    _add(errors, reason)
        v0, v1 = _edge_value(edges[0], c), _edge_value(edges[1], c)
        rail_samples = _valid_count(data.values[c][i:j]) + (v0 is not None) + (v1 is not None)
        own[name] = _rail_reasons(errors, reads, rail_samples, samples, rules)
        figures = _channel_energy(
            ctx.quantity, *_series(ts, data.values[c], t0, t1, v0, v1), t0, t1
        )
        idle_w = idle_ok.rails_w.get(name) if idle_ok is not None else None
        rails[name] = RailEnergy(
            **_energy_fields(figures, window_reasons + own[name], idle_w, duration),
            samples=rail_samples,
            read_errors=errors,
        )

    if ctx.total_method == "rail" and ctx.total_channel is not None:
        base = rails[ctx.total_channel]
        total_figures = base.energy_j_estimate, base.mean_w_estimate, base.peak_w
        total_reasons = [f"total rail {ctx.total_channel}: {r}" for r in own[ctx.total_channel]]
    else:
        wanted = set(ctx.sum_channels if ctx.sum_channels is not None else ctx.channels)
        summed = [n for n in ctx.channels if n in wanted]
        total_figures = _sum_energy(ctx.quantity, summed, rails, edges, data, ctx, t0, t1)
        total_reasons = [f"rail {n} (summed into the total): {r}" for n in summed for r in own[n]]
    idle_total = idle_ok.power_w if idle_ok is not None else None
    total = TotalEnergy(
        **_energy_fields(total_figures, window_reasons + total_reasons, idle_total, duration),
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
        valid=total.valid,
        invalid_reason=total.invalid_reason,
        simulated=ctx.simulated,
        idle_w=total.idle_w,
        idle_energy_j=total.idle_energy_j,
        net_energy_j=total.net_energy_j,
        source=ctx.source,
        sampler=ctx.sampler,
        quantity=ctx.quantity,
        interval_ms_target=ctx.interval_s * 1e3,
        interval_clamp_reason=ctx.interval_clamp_reason,
        reads=reads,
        missed_slots=end.missed_slots - begin.missed_slots,
        min_duration_s=rules.min_duration_s,
        invalid_rails={name: "; ".join(r) for name, r in own.items() if r},
        edge_readings=len(taken),
    )


def _sum_energy(
    quantity: Quantity,
    summed: list[str],
    rails: dict[str, RailEnergy],
    edges: Edges,
    data: SampleSlice,
    ctx: WindowContext,
    t0: float,
    t1: float,
) -> tuple[float | None, float | None, float | None]:
    """(energy J, mean W, peak W) of a sum of rails: the energy is the sum of the rails'
    (None when one has none); the peak comes from the readings where every summed rail
    was read."""
    if not summed:
        return None, None, None
    energies = [rails[n].energy_j_estimate for n in summed]
    if any(e is None for e in energies):
        return None, None, None
    energy = math.fsum(e for e in energies if e is not None)
    positions = [ctx.channels.index(n) for n in summed]
    column = array("d", map(sum, zip(*(data.values[c] for c in positions), strict=True)))
    at_edges: list[float | None] = []
    for edge in edges:
        vals = [_edge_value(edge, c) for c in positions]
        at_edges.append(None if None in vals else sum(x for x in vals if x is not None))
    st, sv = _series(data.ts, column, t0, t1, at_edges[0], at_edges[1])
    _, _, peak = _channel_energy(quantity, st, sv, t0, t1)
    dur = t1 - t0
    return energy, (energy / dur if dur > 0 else None), peak
