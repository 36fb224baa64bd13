"""How the virtual kernel picks a clock: governor, min/max limits, offered steps.

Pure functions, shared by the animator (CPU cpufreq, GPU devfreq, EMC).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

LOAD_GOVERNORS = frozenset(
    {
        "schedutil",
        "ondemand",
        "interactive",
        "conservative",
        "nvhost_podgov",
        "simple_ondemand",
        "wmark_active",
        "wmark_simple",
    }
)
"""Governors that move between min and max with load."""

LOAD_HEADROOM = 1.25
"""schedutil-like headroom: target = min + (max - min) * load * 1.25."""


def effective_limits(offered: Sequence[int], min_v: int, max_v: int) -> tuple[int, int]:
    """The offered steps actually allowed by ``min_v``/``max_v`` (ascending ``offered``).

    The low limit is the lowest step >= min, the high limit the highest step <= max; when
    the limits cross, max wins (like cpufreq resolving min > max).
    """
    lo_i = bisect_left(offered, min_v)
    hi_i = bisect_right(offered, max_v) - 1
    hi = offered[max(0, min(hi_i, len(offered) - 1))]
    lo = offered[min(lo_i, len(offered) - 1)]
    if lo > hi:
        lo = hi
    return lo, hi


def snap_up(offered: Sequence[int], target: float, lo: int, hi: int) -> int:
    """The lowest offered step >= target, within [lo, hi]."""
    if target <= lo:
        return lo
    if target >= hi:
        return hi
    i = bisect_left(offered, target)
    return min(offered[i], hi) if i < len(offered) else hi


def pick_freq(
    governor: str,
    offered: Sequence[int],
    min_v: int,
    max_v: int,
    load: float,
    setspeed: int | None = None,
) -> int:
    """The frequency the kernel would run at, always one of ``offered``.

    ``performance`` -> max, ``powersave`` -> min, ``userspace`` -> ``setspeed``; load-following
    governors (schedutil, ondemand, nvhost_podgov ...) scale between min and max with
    ``load`` (0..1); unknown governors behave like schedutil.
    """
    lo, hi = effective_limits(offered, min_v, max_v)
    if governor == "performance":
        return hi
    if governor == "powersave":
        return lo
    if governor == "userspace":
        if setspeed is None:
            return lo
        return snap_up(offered, setspeed, lo, hi)
    share = min(1.0, max(0.0, load) * LOAD_HEADROOM)
    return snap_up(offered, lo + (hi - lo) * share, lo, hi)
