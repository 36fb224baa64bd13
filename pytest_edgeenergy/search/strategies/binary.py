"""The studies' multi-dimensional binary search, one knob at a time.

Each knob in turn (GPU, batch size, CPU, memory, cores: most to least influential on a DL
workload) is binary-searched for the value that ranks best with the others held, comparing
neighbours ``i`` and ``i+1`` (the discrete slope), which finds the optimum of a unimodal
line in about ``2 log2 n`` profiles. Under a power budget the line is "feasible and faster
as the clock rises, then over budget": the search lands on the highest clock that meets the
budget, as in the studies; without a budget it finds the energy (or EDP) minimum of each
line. Passes repeat until no knob moves. The start is every knob at its lowest value under
a power budget (the point most likely to meet it), at its highest under a latency budget,
and mid-range otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...errors import InvalidValue
from ..objective import Objective
from ..space import Knobs, Point, Space
from ..strategy import StrategyRequest, profiled, rank
from ..trial import Trial

_DIM_ORDER = ("power_mode", "gpu_freq_hz", "batch_size", "cpu_freq_hz", "emc_freq_hz", "cpu_cores")
_MAX_PASSES = 4

_Score = Callable[[list[int]], tuple[int, float]]


class _Need(Exception):
    def __init__(self, point: Point) -> None:
        self.point = point


class BinaryStrategy:
    """Coordinate-wise binary search; replays itself over the history at every call."""

    name = "binary"

    def __init__(self, space: Space, objective: Objective) -> None:
        self.space = space
        self.objective = objective

    def propose(self, history: Sequence[Trial]) -> Knobs | None:
        done = profiled(self.space, history)

        def score(indices: list[int]) -> tuple[int, float]:
            point = self.space.at(indices)
            if not self.space.contains(point):
                return rank(None, self.objective)  # a combination that does not exist
            if point not in done:
                raise _Need(point)
            return rank(done[point], self.objective)

        try:
            self._walk(score)
        except _Need as need:
            return self.space.knobs(need.point)
        return None

    def _start(self) -> list[int]:
        if self.objective.power_budget_w is not None:
            return [0] * len(self.space.dims)
        if self.objective.latency_budget_s is not None:
            return [len(d.values) - 1 for d in self.space.dims]
        return [(len(d.values) - 1) // 2 for d in self.space.dims]

    def _walk(self, score: _Score) -> None:
        current = self._start()
        names = self.space.names
        order = [names.index(n) for n in _DIM_ORDER if n in names]
        for _ in range(_MAX_PASSES):
            moved = False
            for d in order:
                best = self._line(score, current, d)
                if best != current[d]:
                    current[d] = best
                    moved = True
            if not moved:
                return

    def _line(self, score: _Score, current: list[int], d: int) -> int:
        def at(i: int) -> tuple[int, float]:
            return score([*current[:d], i, *current[d + 1 :]])

        dim = self.space.dims[d]
        if not dim.ordered:  # no order to bisect: try every value
            return min(range(len(dim.values)), key=lambda i: (at(i), i))
        lo, hi = 0, len(dim.values) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if at(mid + 1) < at(mid):
                lo = mid + 1
            else:
                hi = mid
        return lo if at(lo) < at(current[d]) else current[d]


def create(request: StrategyRequest) -> BinaryStrategy:
    """``binary`` (entry point): coordinate-wise binary search (the studies' search under a
    power budget); it finds one point, so it refuses the pareto objective."""
    if request.objective.multi:
        raise InvalidValue(
            "strategy 'binary' finds one point and cannot build a pareto front; "
            "use grid, random, optuna or auto"
        )
    return BinaryStrategy(request.space, request.objective)
