"""The built-in strategies and the registry that finds every strategy by name.

Each strategy is registered as an entry point of the group ``pytest_edgeenergy.strategies``
(the built-ins in this project's ``pyproject.toml``, each module's ``create``; a plugin in
its own): the name maps to a :class:`~..strategy.StrategyFactory`. Each module imports its
heavy dependencies (numpy, optuna) itself, when the strategy is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from ...registry import STRATEGIES_GROUP, ExtensionError, load
from ..objective import Objective
from ..space import Space
from ..strategy import Strategy, StrategyRequest
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
    """The strategy registered as ``name``; :class:`~...errors.InvalidValue` for an unknown
    name or one that cannot serve ``objective`` (binary has no pareto front),
    :class:`ExtensionError` for a plugin's strategy that cannot be loaded or returns no
    strategy. ``trials``, the search's budget when known, shapes auto's first design."""
    factory = load(STRATEGIES_GROUP, name)
    request = StrategyRequest(space, objective, seed=seed, prior=tuple(prior), trials=trials)
    strategy = factory(request)
    if not callable(getattr(strategy, "propose", None)) or not isinstance(
        getattr(strategy, "name", None), str
    ):
        raise ExtensionError(
            f"strategy {name!r}: its factory returned a {type(strategy).__name__}, which is "
            "not a Strategy (a str name and a propose(history) method)"
        )
    return cast(Strategy, strategy)
