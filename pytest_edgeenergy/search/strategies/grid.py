"""Today's behaviour: every point, walked so that consecutive points change few knobs."""

from __future__ import annotations

from collections.abc import Sequence

from ...control.grid import CHANGE_ORDER
from ..space import Knobs, Point, Space
from ..strategy import StrategyRequest, first_unprofiled
from ..trial import Trial

# Batch size changes nothing on the board: it varies fastest.
_CHANGE_ORDER = (*CHANGE_ORDER, "batch_size")


def fewest_change_order(space: Space) -> list[Point]:
    """Every point of ``space``, grouped by the costliest knob first, each other group
    walked backwards (a reflected Gray-code walk: neighbours differ in one knob)."""
    order = [space.names.index(n) for n in _CHANGE_ORDER if n in space.names]

    def walk(points: list[Point], fields: list[int]) -> list[Point]:
        if not fields or len(points) <= 1:
            return points
        f = fields[0]
        ordered: list[Point] = []
        for i, value in enumerate(space.dims[f].values):
            inner = walk([p for p in points if p[f] == value], fields[1:])
            ordered += inner[::-1] if i % 2 else inner
        return ordered

    return walk(space.all_points(), order)


class GridStrategy:
    """The full grid in the fewest-change order."""

    name = "grid"

    def __init__(self, space: Space) -> None:
        self.space = space
        self._order = fewest_change_order(space)

    def propose(self, history: Sequence[Trial]) -> Knobs | None:
        return first_unprofiled(self.space, self._order, history)


def create(request: StrategyRequest) -> GridStrategy:
    """``grid`` (entry point): every point in the fewest-change order."""
    return GridStrategy(request.space)
