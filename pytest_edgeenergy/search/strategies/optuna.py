"""``optuna``: Optuna's TPE sampler through its ask/tell interface.

Every proposal builds a fresh in-memory study from the history (``add_trial``), so the
proposal depends on the seed and the history only: a resumed search continues as the
uninterrupted one. Budgets are Optuna constraints (``power_w - budget <= 0``), which its
TPE sampler ranks below every feasible trial; pareto is a two-objective study (time,
energy), which the same sampler handles (MOTPE); max-train-throughput minimises minus the
training minibatches/s, its latency constraint the inference latency p99. Knobs are
integer indices into their ordered values (so TPE sees their order), categorical for a
power mode.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ...extras import require
from ..objective import Objective
from ..space import Knobs, Point, Space
from ..strategy import StrategyRequest, profiled
from ..trial import Trial

if TYPE_CHECKING:
    import optuna

_MAX_ASKS = 64
"""Asks per proposal before a repeated or missing point falls back to a seeded random one."""


class OptunaStrategy:
    """TPE (multivariate) with constraints; see the module's docstring."""

    name = "optuna"

    def __init__(self, space: Space, objective: Objective, *, seed: int = 0) -> None:
        require("optuna", "search", "the optuna search strategy")
        self.space = space
        self.objective = objective
        self.seed = seed

    def _distributions(self) -> dict[str, optuna.distributions.BaseDistribution]:
        import optuna

        out: dict[str, optuna.distributions.BaseDistribution] = {}
        for dim in self.space.dims:
            n = len(dim.values)
            if dim.ordered and n > 1:
                out[dim.name] = optuna.distributions.IntDistribution(0, n - 1)
            else:
                out[dim.name] = optuna.distributions.CategoricalDistribution(tuple(range(n)))
        return out

    def _frozen(self, point: Point, trial: Trial) -> optuna.trial.FrozenTrial:
        import optuna

        params = dict(zip(self.space.names, self.space.indices(point), strict=True))
        dists = self._distributions()
        if not trial.ok or self.objective.missing(trial.metrics):
            return optuna.trial.create_trial(
                state=optuna.trial.TrialState.FAIL, params=params, distributions=dists
            )
        return optuna.trial.create_trial(
            params=params,
            distributions=dists,
            **self._told(trial),
        )

    def _told(self, trial: Trial) -> dict[str, Any]:
        """Value(s) and constraints of a measured trial (under max-train-throughput the
        value is minus its training minibatches/s, the latency constraint its p99)."""
        obj = self.objective
        time_s, power_w = trial.measured
        told: dict[str, Any] = {}
        if obj.multi:
            told["values"] = list(obj.values(time_s, power_w))
        else:
            told["value"] = obj.value(time_s, power_w, trial.metrics)
        constraints = {}
        if obj.power_budget_w is not None:
            constraints["power_w"] = power_w - obj.power_budget_w
        if obj.latency_budget_s is not None:
            key = "latency_p99_s" if obj.needs else "time_s"
            constraints[key] = obj.latency_s(time_s, trial.metrics) - obj.latency_budget_s
        if constraints:
            told["constraints"] = constraints
        return told

    def propose(self, history: Sequence[Trial]) -> Knobs | None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        done = profiled(self.space, history)
        free = [p for p in self.space.all_points() if p not in done]
        if not free:
            return None
        seed = (self.seed * 1_000_003 + len(history)) % 2**31
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True)
        directions: list[Literal["minimize"]] = ["minimize"] * (2 if self.objective.multi else 1)
        study = optuna.create_study(directions=directions, sampler=sampler)
        for point, trial in done.items():
            study.add_trial(self._frozen(point, trial))
        dists = self._distributions()
        for _ in range(_MAX_ASKS):
            asked = study.ask(dists)
            point = self.space.at([asked.params[n] for n in self.space.names])
            if point not in done and self.space.contains(point):
                return self.space.knobs(point)
            # A repeat (TPE may ask again for a profiled point) or a combination the space
            # lacks: tell what is known and ask again.
            known = done.get(point)
            if known is not None and known.ok and not self.objective.missing(known.metrics):
                told = self._told(known)
                constraints = told.pop("constraints", None)
                if constraints:
                    for key, value in constraints.items():
                        asked.set_constraint(key, value)
                study.tell(asked, told.get("value", told.get("values")))
            else:
                study.tell(asked, state=optuna.trial.TrialState.FAIL)
        return self.space.knobs(random.Random(seed).choice(free))


def create(request: StrategyRequest) -> OptunaStrategy:
    """``optuna`` (entry point): Optuna's TPE sampler (ask/tell)."""
    return OptunaStrategy(request.space, request.objective, seed=request.seed)
