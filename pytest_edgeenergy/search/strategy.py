"""The strategy interface and the ranking of trials every strategy shares (the registry,
:func:`~.strategies.make_strategy`, is in ``strategies/``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from ..errors import InvalidValue
from .objective import Objective
from .space import Knobs, Point, Space
from .trial import Trial

STRATEGIES = ("grid", "random", "binary", "optuna", "auto")
"""``grid``: every point in the fewest-change order; ``random``: a seeded shuffle;
``binary``: coordinate-wise binary search (the studies' search under a power budget);
``optuna``: Optuna's TPE sampler (ask/tell); ``auto``: a surrogate model of time and power
choosing each next point by expected improvement."""


class Strategy(Protocol):
    """Proposes the next point to profile given every result so far.

    ``propose`` is a function of the strategy's seed and ``history`` only (no hidden state
    carried between calls), so a search resumed from a report's trials continues exactly as
    the uninterrupted one would. It never proposes a point of ``history`` nor one outside
    the space; None means the strategy has nothing more to try.
    """

    name: str

    def propose(self, history: Sequence[Trial]) -> Knobs | None: ...


def rank(trial: Trial | None, objective: Objective) -> tuple[int, float]:
    """Sort key of a trial (lower is better): feasible by objective value, then
    infeasible by how far over budget (a trial marked ``infeasible`` after those over
    budget only), then failed (or None: a point that cannot exist)."""
    if trial is None or not trial.ok:
        return (2, math.inf)
    assert trial.time_s is not None and trial.power_w is not None
    if trial.infeasible is not None:
        return (1, 1.0 + objective.violation(trial.time_s, trial.power_w))
    if not objective.feasible(trial.time_s, trial.power_w):
        return (1, objective.violation(trial.time_s, trial.power_w))
    return (0, objective.value(trial.time_s, trial.power_w))


def profiled(space: Space, history: Sequence[Trial]) -> dict[Point, Trial]:
    """History by point (the last trial of a point wins; points outside the space are
    dropped: a resumed report may hold points an earlier space allowed)."""
    by_point: dict[Point, Trial] = {}
    for trial in history:
        try:
            point = space.point(trial.knobs)
        except InvalidValue:
            continue
        by_point[point] = trial
    return by_point


def first_unprofiled(
    space: Space, order: Sequence[Point], history: Sequence[Trial]
) -> Knobs | None:
    """The first point of a fixed ``order`` not profiled yet (None when all are)."""
    done = profiled(space, history)
    return next((space.knobs(point) for point in order if point not in done), None)
