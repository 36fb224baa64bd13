"""What a search minimises, and under which budget."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidValue

OBJECTIVES = ("min-energy", "min-time", "min-edp", "pareto")
"""``min-energy``: J per unit of work; ``min-time``: s per unit of work (usually under a
power budget); ``min-edp``: J x s; ``pareto``: the time vs energy front."""


@dataclass(frozen=True)
class Objective:
    """An objective and its budgets; ``energy_j = time_s * power_w`` per unit of work."""

    name: str
    power_budget_w: float | None = None
    latency_budget_s: float | None = None

    def __post_init__(self) -> None:
        if self.name not in OBJECTIVES:
            raise InvalidValue(f"unknown objective {self.name!r}; allowed: {', '.join(OBJECTIVES)}")
        for label, budget in (
            ("power budget", self.power_budget_w),
            ("latency budget", self.latency_budget_s),
        ):
            if budget is not None and not (math.isfinite(budget) and budget > 0):
                raise InvalidValue(f"{label} {budget!r}: must be a positive number")

    @property
    def multi(self) -> bool:
        """True for the pareto objective (two values, no single best)."""
        return self.name == "pareto"

    def feasible(self, time_s: float, power_w: float) -> bool:
        """True when the point meets every budget."""
        if self.power_budget_w is not None and power_w > self.power_budget_w:
            return False
        return self.latency_budget_s is None or time_s <= self.latency_budget_s

    def violation(self, time_s: float, power_w: float) -> float:
        """How far over its budgets a point is (relative; 0 when feasible)."""
        over = 0.0
        if self.power_budget_w is not None:
            over += max(0.0, power_w / self.power_budget_w - 1.0)
        if self.latency_budget_s is not None:
            over += max(0.0, time_s / self.latency_budget_s - 1.0)
        return over

    def value(self, time_s: float, power_w: float) -> float:
        """The scalar minimised (for pareto: energy, the front's second axis)."""
        energy_j = time_s * power_w
        if self.name == "min-time":
            return time_s
        if self.name == "min-edp":
            return energy_j * time_s
        return energy_j

    def values(self, time_s: float, power_w: float) -> tuple[float, float]:
        """(time_s, energy_j): the two axes of the pareto front."""
        return time_s, time_s * power_w

    def describe(self) -> str:
        parts = [self.name]
        if self.power_budget_w is not None:
            parts.append(f"power <= {self.power_budget_w:g} W")
        if self.latency_budget_s is not None:
            parts.append(f"time <= {self.latency_budget_s:g} s")
        return ", ".join(parts)
