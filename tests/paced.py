"""Work whose windows last a length set by the clock, for tests that judge a verdict (a gate,
an A/B rule, a history) from live measurement on a busy host.

On a virtual board whose utilisation is pinned (``--edge-sim-load``) the power is constant
(±1 % noise, averaged over a window), so a window's energy is that power times the window's
length: the length is what a test's verdict rests on. ``time.sleep(D)`` per call makes a
window as long as its calls' sleeps *plus every wake-up's lateness*: with four CPU-bound
processes beside the tests on 2 cores a sleeper wakes a few ms late, call after call, so a
36-call window came out 1-106 % long and an unchanged run was judged a regression.
:class:`Paced` sleeps until deadlines ``period_s`` apart anchored at the first call of the
window (``edge_bench.run(work, setup=work.restart, ...)``), so a late wake-up only shortens
the next sleep: a window of N calls lasts ``N x period_s`` plus the lateness of its last
wake-up alone. Under that load, over 2,000 windows, that lateness had a median of 3.5 ms,
a 99th percentile of 36 ms and a maximum of 0.22 s. Tests choose ``items x period_s`` long
enough that one such lateness cannot reach what their verdict needs (see each test), and
give "changed" work an effect far above it.

A workload file a test writes (pytester, a checkout of its own) starts with this module's
code (:func:`with_paced`), so it needs no copy of this module beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["Paced", "with_paced"]


class Paced:
    """A call that returns at the next deadline: the first call after :meth:`restart`
    anchors the schedule at its own start, call k returns at ``anchor + k * period_s`` (at
    once when that has passed). Pass :meth:`restart` as ``edge_bench.run``'s ``setup``: it
    runs before the warm-up and before each window, so every window has its own anchor."""

    def __init__(
        self,
        period_s: float,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not period_s > 0:
            raise ValueError(f"period_s must be > 0 s, got {period_s!r}")
        self.period_s = period_s
        self._clock = clock
        self._sleep = sleep
        self._deadline: float | None = None

    def restart(self) -> None:
        """Anchor the schedule at the next call."""
        self._deadline = None

    def __call__(self) -> None:
        now = self._clock()
        deadline = (now if self._deadline is None else self._deadline) + self.period_s
        self._deadline = deadline
        if deadline > now:
            self._sleep(deadline - now)


def with_paced(code: str) -> str:
    """A workload file's text: this module's code (so the file defines :class:`Paced`), then
    ``code``."""
    return Path(__file__).read_text(encoding="utf-8") + "\n\n" + code
