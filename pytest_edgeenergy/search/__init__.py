"""Operating-point search: strategies proposing points, oracles measuring them.

A :class:`~.space.Space` holds the knobs and their values, an :class:`~.objective.Objective`
what is minimised under which budgets, a :class:`~.trial.Trial` one profiled point. A
strategy (:func:`~.strategies.make_strategy`: grid, random, binary, optuna, auto, or one a
plugin registers as a ``pytest_edgeenergy.strategies`` entry point) proposes
the next point from the history; an oracle (a live board, or a
:class:`~.replay.ReplayOracle`) measures it; :class:`~.driver.Search` drives the two and
recommends the best *profiled* feasible point. Nothing heavy (numpy, optuna) is imported
until a strategy needs it.
"""

from __future__ import annotations

from .driver import Oracle, PointFailed, Search, SearchResult, best, pareto_front
from .objective import OBJECTIVES, Objective
from .space import KNOB_NAMES, Dimension, Knobs, Space
from .strategies import make_strategy
from .strategy import Strategy, StrategyFactory, StrategyRequest, rank, strategy_names
from .trial import Trial

__all__ = [
    "KNOB_NAMES",
    "OBJECTIVES",
    "Dimension",
    "Knobs",
    "Objective",
    "Oracle",
    "PointFailed",
    "Search",
    "SearchResult",
    "Space",
    "Strategy",
    "StrategyFactory",
    "StrategyRequest",
    "Trial",
    "best",
    "make_strategy",
    "pareto_front",
    "rank",
    "strategy_names",
]
