"""How ``edge_bench`` runs a workload: work per repeat, repeats, warm-up, window length,
the workload filter. Built from the plugin's options by
:mod:`pytest_edgeenergy.plugin.bench_options`."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

__all__ = ["DEFAULT", "QUICK", "BenchSettings"]


@dataclass(frozen=True)
class BenchSettings:
    """How ``edge_bench`` runs a workload: fixed work per repeat, in energy windows."""

    items: int | None
    """Items (inferences, samples...) per repeat; None = two calls' worth (``--edge-quick``)."""
    repeats: int
    """Measured windows per run."""
    warmup: int
    """Unmeasured calls before the first window (also used to calibrate the window length)."""
    min_window_s: float
    """A repeat shorter than this gets more calls (calibrated from the warm-up)."""
    quick: bool = False
    workloads: tuple[str, ...] = ()
    """Workload filter: names or glob patterns, lower case; empty = every workload."""

    def items_for(self, items_per_call: int) -> int:
        """Items per repeat for a workload doing ``items_per_call`` items per call."""
        if self.items is None:
            return 2 * items_per_call
        return self.items

    def selects(self, workload: str) -> bool:
        """True when ``workload`` passes the ``--workload`` filter (case-insensitive globs)."""
        if not self.workloads:
            return True
        name = workload.lower()
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.workloads)


DEFAULT = BenchSettings(items=3200, repeats=10, warmup=2, min_window_s=0.5)
"""The study's protocol: 3,200 items per repeat, 10 repeats."""
QUICK = BenchSettings(items=None, repeats=2, warmup=1, min_window_s=0.1, quick=True)
"""Smoke runs: two calls' worth of items, 2 repeats, 1 warm-up call, 0.1 s windows."""
