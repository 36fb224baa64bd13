"""The strategy interface, the factory a registered strategy provides, and the ranking of
trials every strategy shares (the registry, :func:`~.strategies.make_strategy`, is in
``strategies/``; names come from the ``pytest_edgeenergy.strategies`` entry points)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import InvalidValue
from ..registry import STRATEGIES_GROUP, builtin_names, names
from .objective import Objective
from .space import Knobs, Point, Space
from .trial import Trial


def strategy_names() -> tuple[str, ...]:
    """Every registered strategy, sorted: the built-ins (``auto``, ``binary``, ``grid``,
    ``optuna``, ``random``) and those of installed plugins."""
    return names(STRATEGIES_GROUP)


def builtin_strategy_names() -> tuple[str, ...]:
    """The strategies this project registers (cheap: no scan of installed packages)."""
    return builtin_names(STRATEGIES_GROUP)


class Strategy(Protocol):
    """Proposes the next point to profile given every result so far.

    ``propose`` is a function of the strategy's seed and ``history`` only (no hidden state
    carried between calls), so a search resumed from a report's trials continues exactly as
    the uninterrupted one would. It never proposes a point of ``history`` nor one outside
    the space; None means the strategy has nothing more to try.
    """

    name: str

    def propose(self, history: Sequence[Trial]) -> Knobs | None: ...


@dataclass(frozen=True)
class StrategyRequest:
    """What a strategy is made for: the search's space, objective, seed, the prior's
    profiles (``--prior``; only ``auto`` takes them) and the trial budget when known.
    Fields may be added; a factory reads the ones it needs."""

    space: Space
    objective: Objective
    seed: int = 0
    prior: Sequence[Trial] = ()
    trials: int | None = None


class StrategyFactory(Protocol):
    """What a ``pytest_edgeenergy.strategies`` entry point names: makes the strategy for
    one search, or raises :class:`~pytest_edgeenergy.errors.InvalidValue` saying why it
    cannot serve the request (e.g. an objective it does not handle)."""

    def __call__(self, request: StrategyRequest, /) -> Strategy: ...


def rank(trial: Trial | None, objective: Objective) -> tuple[int, float]:
    """Sort key of a trial (lower is better): feasible by objective value, then
    infeasible by how far over budget (a trial marked ``infeasible`` after those over
    budget only), then failed (or None: a point that cannot exist; or a trial without a
    metric the objective needs: it cannot be judged)."""
    if trial is None or not trial.ok or objective.missing(trial.metrics):
        return (2, math.inf)
    assert trial.time_s is not None and trial.power_w is not None
    figures = (trial.time_s, trial.power_w, trial.metrics)
    if trial.infeasible is not None:
        return (1, 1.0 + objective.violation(*figures))
    if not objective.feasible(*figures):
        return (1, objective.violation(*figures))
    return (0, objective.value(*figures))


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
