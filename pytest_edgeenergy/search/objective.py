"""What a search minimises, and under which budget.

The time and energy objectives read a trial's ``time_s`` and ``power_w`` (per unit of
work); ``max-train-throughput`` (an interleaved training + inference workload) reads named
metrics as well (:data:`METRICS_OF`: training minibatches/s, inference latency p99), which
a trial carries in :attr:`~.trial.Trial.metrics`. ``feasible``, ``violation`` and ``value``
take them as ``metrics``; an objective that needs one the caller lacks raises
:class:`~pytest_edgeenergy.errors.InvalidValue` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidValue

OBJECTIVES = ("min-energy", "min-time", "min-edp", "pareto", "max-train-throughput")
"""``min-energy``: J per unit of work; ``min-time``: s per unit of work (usually under a
power budget); ``min-edp``: J x s; ``pareto``: the time vs energy front;
``max-train-throughput``: training minibatches/s of an interleaved workload, its
inference latency p99 under the latency budget."""

THROUGHPUT = "train_minibatches_per_s"
LATENCY_P99 = "latency_p99_s"
METRICS_OF: dict[str, tuple[str, ...]] = {"max-train-throughput": (THROUGHPUT, LATENCY_P99)}
"""Named metrics each objective reads besides time and power (none: time and power only)."""


Metrics = Mapping[str, float]


def metrics_text(metrics: Mapping[str, float]) -> str:
    """An interleaved point's figures for people (empty without them):
    ``  4.088 minibatch/s  p99 0.2984 s``."""
    out = f"  {metrics[THROUGHPUT]:.4g} minibatch/s" if THROUGHPUT in metrics else ""
    return out + (f"  p99 {metrics[LATENCY_P99]:.4g} s" if LATENCY_P99 in metrics else "")


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

    @property
    def needs(self) -> tuple[str, ...]:
        """The named metrics this objective reads (empty: time and power are enough)."""
        return METRICS_OF.get(self.name, ())

    @property
    def maximises(self) -> bool:
        """True when the objective's figure is maximised (:meth:`value` is its negative)."""
        return self.name == "max-train-throughput"

    def missing(self, metrics: Metrics | None) -> list[str]:
        """The metrics this objective needs that ``metrics`` lacks (or holds as no number)."""
        have = metrics or {}
        return [n for n in self.needs if not _number(have.get(n))]

    def _metric(self, metrics: Metrics | None, name: str) -> float:
        value = (metrics or {}).get(name)
        if not _number(value):
            raise InvalidValue(
                f"objective {self.name} needs the metric {name}; the trial has "
                f"{', '.join(sorted(metrics or {})) or 'none'}"
            )
        return float(value)  # type: ignore[arg-type]

    def latency_s(self, time_s: float, metrics: Metrics | None = None) -> float:
        """What the latency budget bounds: the inference latency p99 under
        ``max-train-throughput``, the time per unit of work otherwise."""
        return self._metric(metrics, LATENCY_P99) if self.needs else time_s

    def feasible(self, time_s: float, power_w: float, metrics: Metrics | None = None) -> bool:
        """True when the point meets every budget."""
        if self.power_budget_w is not None and power_w > self.power_budget_w:
            return False
        return self.latency_budget_s is None or (
            self.latency_s(time_s, metrics) <= self.latency_budget_s
        )

    def violation(self, time_s: float, power_w: float, metrics: Metrics | None = None) -> float:
        """How far over its budgets a point is (relative; 0 when feasible)."""
        over = 0.0
        if self.power_budget_w is not None:
            over += max(0.0, power_w / self.power_budget_w - 1.0)
        if self.latency_budget_s is not None:
            over += max(0.0, self.latency_s(time_s, metrics) / self.latency_budget_s - 1.0)
        return over

    def value(self, time_s: float, power_w: float, metrics: Metrics | None = None) -> float:
        """The scalar minimised (for pareto: energy, the front's second axis; for
        max-train-throughput: minus the training minibatches/s)."""
        if self.name == "max-train-throughput":
            return -self._metric(metrics, THROUGHPUT)
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
            what = "inference latency p99" if self.needs else "time"
            parts.append(f"{what} <= {self.latency_budget_s:g} s")
        return ", ".join(parts)


def _number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
