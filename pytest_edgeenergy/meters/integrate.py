"""Pure integration of sampled power (or energy counters) over a time window.

The samples define a piecewise-linear signal: between two samples the value is the straight
line joining them, before the first sample it is the first value and after the last sample
the last value. Window edges are interpolated on that line, so the energy of a window does
not depend on where the samples fall, and splitting a window in two gives two energies that
add up to the whole.

``ts`` must be sorted ascending (monotonic clock seconds) and ``values`` as long as ``ts``;
both may be any sequence (``array('d')``, list, a slice). Plain Python on purpose: no numpy.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ..errors import EdgeEnergyError


class IntegrationError(EdgeEnergyError, ValueError):
    """The inputs cannot be integrated (no samples, mismatched lengths, reversed window)."""


def _check(ts: Sequence[float], values: Sequence[float], t0: float, t1: float) -> None:
    if len(ts) != len(values):
        raise IntegrationError(
            f"timestamps and values differ in length: {len(ts)} != {len(values)}"
        )
    if not ts:
        raise IntegrationError("no samples: cannot integrate an empty series")
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise IntegrationError(f"window edges must be finite, got t0={t0!r} t1={t1!r}")
    if t1 < t0:
        raise IntegrationError(f"window end {t1!r} is before its start {t0!r}")


def interpolate_at(ts: Sequence[float], values: Sequence[float], t: float) -> float:
    """Value of the piecewise-linear signal at time ``t`` (held constant outside the data)."""
    n = len(ts)
    if n == 0:
        raise IntegrationError("no samples: cannot interpolate an empty series")
    i = bisect_right(ts, t)
    if i == 0:
        return float(values[0])
    if i == n:
        return float(values[n - 1])
    ta = ts[i - 1]
    tb = ts[i]
    va = values[i - 1]
    if tb == ta:
        return float(values[i])
    return float(va + (values[i] - va) * (t - ta) / (tb - ta))


def energy_between(ts: Sequence[float], values: Sequence[float], t0: float, t1: float) -> float:
    """Energy in J of power samples (W) over ``[t0, t1]``: trapezoids, interpolated edges."""
    _check(ts, values, t0, t1)
    if t1 == t0:
        return 0.0
    i = bisect_right(ts, t0)  # first sample strictly after t0
    j = bisect_left(ts, t1)  # first sample at or after t1
    prev_t = t0
    prev_v = interpolate_at(ts, values, t0)
    total = 0.0
    for k in range(i, j):
        t = ts[k]
        v = values[k]
        total += (t - prev_t) * (prev_v + v)
        prev_t = t
        prev_v = v
    total += (t1 - prev_t) * (prev_v + interpolate_at(ts, values, t1))
    return 0.5 * total


def counter_energy_between(
    ts: Sequence[float], values: Sequence[float], t0: float, t1: float
) -> float:
    """Energy in J from a cumulative counter (J): interpolated ``E(t1) - E(t0)``."""
    _check(ts, values, t0, t1)
    return interpolate_at(ts, values, t1) - interpolate_at(ts, values, t0)


def mean_power_between(ts: Sequence[float], values: Sequence[float], t0: float, t1: float) -> float:
    """Time-weighted mean power in W over ``[t0, t1]`` (the value at ``t0`` if empty window)."""
    if t1 == t0:
        _check(ts, values, t0, t1)
        return interpolate_at(ts, values, t0)
    return energy_between(ts, values, t0, t1) / (t1 - t0)


def peak_between(ts: Sequence[float], values: Sequence[float], t0: float, t1: float) -> float:
    """Largest value of the piecewise-linear signal over ``[t0, t1]`` (samples and edges)."""
    _check(ts, values, t0, t1)
    peak = max(interpolate_at(ts, values, t0), interpolate_at(ts, values, t1))
    i = bisect_right(ts, t0)
    j = bisect_left(ts, t1)
    for k in range(i, j):
        v = values[k]
        if v > peak:
            peak = v
    return float(peak)


def counter_peak_power_between(
    ts: Sequence[float], values: Sequence[float], t0: float, t1: float
) -> float:
    """Largest mean power in W between consecutive counter points inside ``[t0, t1]``.

    The points are the interpolated edges and the samples strictly inside the window.
    """
    _check(ts, values, t0, t1)
    if t1 == t0:
        return 0.0
    i = bisect_right(ts, t0)
    j = bisect_left(ts, t1)
    points_t = [t0, *ts[i:j], t1]
    points_e = [interpolate_at(ts, values, t0), *values[i:j], interpolate_at(ts, values, t1)]
    peak = -math.inf
    for k in range(1, len(points_t)):
        dt = points_t[k] - points_t[k - 1]
        if dt > 0.0:
            p = (points_e[k] - points_e[k - 1]) / dt
            if p > peak:
                peak = p
    return float(peak)


def index_range(ts: Sequence[float], t0: float, t1: float) -> tuple[int, int]:
    """``(i, j)`` such that ``ts[i:j]`` are the samples with ``t0 <= t <= t1``."""
    return bisect_left(ts, t0), bisect_right(ts, t1)


def interval_stats(ts: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and population stdev (jitter) of the intervals between timestamps, in s.

    ``(None, None)`` when fewer than two timestamps.
    """
    n = len(ts)
    if n < 2:
        return None, None
    mean = (ts[n - 1] - ts[0]) / (n - 1)
    acc = 0.0
    prev = ts[0]
    for k in range(1, n):
        t = ts[k]
        d = t - prev - mean
        acc += d * d
        prev = t
    return float(mean), math.sqrt(acc / (n - 1))
