"""Latency statistics of one repeat: mean and percentiles of per-call times.

Percentiles use linear interpolation between closest ranks (numpy's default ``linear``
method, the ``inclusive`` method of :func:`statistics.quantiles`). Aggregation over repeats
(mean, median, stdev, 95 % t-interval) is the report's :func:`~..report.model.compute_stats`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..report.model import Stats, compute_stats

__all__ = ["LatencySummary", "Stats", "compute_stats", "percentile", "summarize_latencies"]


def percentile(sorted_xs: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already sorted values, linearly interpolated."""
    if not sorted_xs:
        raise ValueError("percentile of no values")
    if not (0.0 <= q <= 100.0):
        raise ValueError(f"percentile q must be within 0..100, got {q!r}")
    pos = (len(sorted_xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    frac = pos - lo
    a, b = sorted_xs[lo], sorted_xs[hi]
    return a if frac == 0.0 else a + (b - a) * frac


@dataclass(frozen=True)
class LatencySummary:
    """Per-call latency of one repeat, s."""

    n: int
    mean_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    min_s: float
    max_s: float


def summarize_latencies(latencies_s: Iterable[float]) -> LatencySummary | None:
    """Mean, p50/p90/p99, min and max of per-call latencies; None for no calls."""
    xs = sorted(latencies_s)
    if not xs:
        return None
    return LatencySummary(
        n=len(xs),
        mean_s=math.fsum(xs) / len(xs),
        p50_s=percentile(xs, 50.0),
        p90_s=percentile(xs, 90.0),
        p99_s=percentile(xs, 99.0),
        min_s=xs[0],
        max_s=xs[-1],
    )
