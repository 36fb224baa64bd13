"""The strategies and their registry; each module imports its heavy dependencies (numpy,
optuna) itself, when the strategy is made."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import InvalidValue
from ..objective import Objective
from ..space import Space
from ..strategy import STRATEGIES, Strategy
from ..trial import Trial


def make_strategy(
    name: str,
    space: Space,
    objective: Objective,
    *,
    seed: int = 0,
    prior: Sequence[Trial] = (),
    trials: int | None = None,
) -> Strategy:
    """The strategy called ``name``; :class:`InvalidValue` for an unknown name or one that
    cannot serve ``objective`` (binary has no pareto front). ``trials``, the search's
    budget when known, shapes auto's first design."""
    if name == "grid":
        from .grid import GridStrategy

        return GridStrategy(space)
    if name == "random":
        from .random import RandomStrategy

        return RandomStrategy(space, seed=seed)
    if name == "binary":
        from .binary import BinaryStrategy

        if objective.multi:
            raise InvalidValue(
                "strategy 'binary' finds one point and cannot build a pareto front; "
                "use grid, random, optuna or auto"
            )
        return BinaryStrategy(space, objective)
    if name == "optuna":
        from .optuna import OptunaStrategy

        return OptunaStrategy(space, objective, seed=seed)
    if name == "auto":
        from .auto import AutoStrategy

        return AutoStrategy(space, objective, seed=seed, prior=prior, trials=trials)
    raise InvalidValue(f"unknown strategy {name!r}; allowed: {', '.join(STRATEGIES)}")
