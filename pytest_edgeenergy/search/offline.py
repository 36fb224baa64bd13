"""The offline search: a replayed profile table searched with the same
:class:`~.driver.Search` the plugin drives on a live board, a :class:`~.replay.ReplayOracle`
answering from the table (``edgeenergy search --replay``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidValue
from .driver import Search, SearchResult
from .objective import Objective
from .replay import ReplayOracle, ReplayTable
from .strategies import make_strategy
from .trial import Trial, knobs_text


def check_budget(table: ReplayTable, objective: Objective) -> None:
    """Refuse a budget that no point of ``table`` meets, naming the closest point."""
    if any(objective.feasible(*t.measured, t.metrics) for t in table.trials):
        return
    if objective.power_budget_w is not None:
        low = min(table.trials, key=lambda t: t.power_w or 0.0)
        if low.power_w is not None and low.power_w > objective.power_budget_w:
            raise InvalidValue(
                f"no operating point meets {objective.power_budget_w:g} W; the lowest "
                f"measured was {low.power_w:.4g} W at {knobs_text(low.knobs)}"
            )
    if objective.latency_budget_s is not None:
        fast = min(table.trials, key=lambda t: objective.latency_s(t.measured[0], t.metrics))
        fast_s = objective.latency_s(fast.measured[0], fast.metrics)
        if fast_s > objective.latency_budget_s:
            what = "lowest inference latency p99" if objective.needs else "fastest"
            raise InvalidValue(
                f"no operating point meets {objective.latency_budget_s:g} s; the {what} "
                f"measured was {fast_s:.4g} s at {knobs_text(fast.knobs)}"
            )
    raise InvalidValue(f"no operating point meets both budgets ({objective.describe()})")


def run_replay(
    table: ReplayTable,
    objective: Objective,
    strategy: str,
    trials: int,
    *,
    seed: int = 0,
    prior: Sequence[Trial] = (),
) -> SearchResult:
    """Search ``table`` with a replay oracle (everything checked before the first trial)."""
    if trials < 1:
        raise InvalidValue(f"--trials {trials}: must be at least 1")
    check_budget(table, objective)
    chosen = make_strategy(strategy, table.space, objective, seed=seed, prior=prior, trials=trials)
    return Search(table.space, objective, chosen).run(ReplayOracle(table), trials)
