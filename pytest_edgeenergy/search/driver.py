"""The search loop: a strategy proposes, an oracle measures, the best profiled point wins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import EdgeEnergyError, InvalidValue
from .objective import Objective
from .space import Knobs, Space
from .strategy import Strategy, profiled, rank
from .trial import Trial


class StrategyError(EdgeEnergyError):
    """A strategy broke its contract (:class:`~.strategy.Strategy`): it proposed a point
    outside the space or one already profiled. A bug of the strategy, named in the message."""


class PointFailed(EdgeEnergyError):
    """An oracle could not measure a point (out of memory, a mode needing a reboot...):
    the search records a failed trial and goes on."""


class Oracle(Protocol):
    """Answers a point with its measured time and power (a live board or a replay)."""

    def measure(self, knobs: Knobs) -> Trial: ...


def best(trials: Sequence[Trial], objective: Objective) -> Trial | None:
    """The best feasible profiled trial (None when none is feasible); never a prediction."""
    ok = [t for t in trials if rank(t, objective)[0] == 0]
    return min(ok, key=lambda t: rank(t, objective)) if ok else None


def pareto_front(trials: Sequence[Trial], objective: Objective) -> list[Trial]:
    """Feasible measured trials that no other beats on both time and energy, by time."""
    ok = [t for t in trials if rank(t, objective)[0] == 0]
    pts = [(objective.values(t.time_s, t.power_w), t) for t in ok]  # type: ignore[arg-type]
    front = [
        t for (a, t) in pts if not any(b[0] <= a[0] and b[1] <= a[1] and b != a for b, _ in pts)
    ]
    return sorted(front, key=lambda t: (t.time_s, t.energy_j))


@dataclass(frozen=True)
class SearchResult:
    """What a search found: every trial in order, the recommendation, the front."""

    strategy: str
    objective: Objective
    trials: tuple[Trial, ...]
    best: Trial | None
    front: tuple[Trial, ...]

    @property
    def profiles(self) -> int:
        """Distinct points measured (failed ones included: the board was tried)."""
        return len({tuple(sorted(t.knobs.items())) for t in self.trials})

    def to_json(self) -> dict[str, Any]:
        """The ``edgeenergy search --json`` shape (and the report's ``search`` section)."""
        objective = self.objective
        return {
            "strategy": self.strategy,
            "objective": objective.name,
            "power_budget_w": objective.power_budget_w,
            "latency_budget_s": objective.latency_budget_s,
            "profiles": self.profiles,
            "best": _point_json(self.best) if self.best is not None else None,
            "front": [_point_json(t) for t in self.front] if objective.multi else None,
            "trials": [
                {
                    **_point_json(t),
                    "feasible": rank(t, objective)[0] == 0,
                    "failed": t.failed,
                    **({"infeasible": t.infeasible} if t.infeasible is not None else {}),
                }
                for t in self.trials
            ],
        }


def _point_json(t: Trial) -> dict[str, Any]:
    return {
        "knobs": dict(t.knobs),
        "time_s": t.time_s,
        "power_w": t.power_w,
        "energy_j": t.energy_j,
        **({"metrics": dict(t.metrics)} if t.metrics else {}),
    }


class Search:
    """Drives one strategy over one space. ``history`` (a resumed search's trials) counts
    towards ``trials``; the live plugin calls :meth:`propose` when a trial's test starts
    and :meth:`record` when it ends, :meth:`run` does both with an oracle."""

    def __init__(
        self,
        space: Space,
        objective: Objective,
        strategy: Strategy,
        history: Sequence[Trial] = (),
    ) -> None:
        self.space = space
        self.objective = objective
        self.strategy = strategy
        self.trials: list[Trial] = list(history)

    def propose(self) -> Knobs | None:
        """The next point to profile, or None when the strategy has nothing left."""
        knobs = self.strategy.propose(self.trials)
        if knobs is None:
            return None
        point = self.space.point(knobs)
        if not self.space.contains(point):
            raise StrategyError(
                f"strategy {self.strategy.name!r} proposed {dict(knobs)}, which is outside the "
                "search space; a strategy proposes only points of the space it was made for"
            )
        if point in profiled(self.space, self.trials):
            raise StrategyError(
                f"strategy {self.strategy.name!r} proposed {dict(knobs)} again; a strategy "
                "proposes each point once (None when it has nothing left to try)"
            )
        return knobs

    def record(self, trial: Trial) -> None:
        self.trials.append(trial)

    def measure(self, oracle: Oracle, knobs: Knobs) -> Trial:
        """``oracle``'s trial of ``knobs``; a :class:`PointFailed` becomes a failed trial."""
        try:
            return oracle.measure(knobs)
        except PointFailed as exc:
            return Trial(knobs=dict(knobs), failed=str(exc))

    def run(self, oracle: Oracle, trials: int) -> SearchResult:
        """Propose and measure until ``trials`` trials exist (or the strategy stops)."""
        if trials < 1:
            raise InvalidValue(f"trials {trials}: must be at least 1")
        while len(self.trials) < trials:
            knobs = self.propose()
            if knobs is None:
                break
            self.record(self.measure(oracle, knobs))
        return self.result()

    def result(self) -> SearchResult:
        return SearchResult(
            strategy=self.strategy.name,
            objective=self.objective,
            trials=tuple(self.trials),
            best=best(self.trials, self.objective),
            front=tuple(pareto_front(self.trials, self.objective)),
        )
