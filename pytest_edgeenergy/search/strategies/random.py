"""Uniform random points without repetition, reproducible from the seed."""

from __future__ import annotations

import random
from collections.abc import Sequence

from ..space import Knobs, Space
from ..strategy import StrategyRequest, first_unprofiled
from ..trial import Trial


class RandomStrategy:
    """A seeded shuffle of the space, walked in order (skipping profiled points)."""

    name = "random"

    def __init__(self, space: Space, *, seed: int = 0) -> None:
        self.space = space
        self._order = space.all_points()
        random.Random(seed).shuffle(self._order)

    def propose(self, history: Sequence[Trial]) -> Knobs | None:
        return first_unprofiled(self.space, self._order, history)


def create(request: StrategyRequest) -> RandomStrategy:
    """``random`` (entry point): a seeded shuffle of the space."""
    return RandomStrategy(request.space, seed=request.seed)
