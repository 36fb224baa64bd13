"""One profiled point: what was measured, or why it could not be."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .space import Knobs, KnobValue


def knobs_text(knobs: Mapping[str, object]) -> str:
    """Knobs for people: ``gpu_freq=921.6MHz batch_size=13`` (a frequency in kHz, MHz or
    GHz as in operating-point ids, :func:`~pytest_edgeenergy.control.values.format_freq`;
    the JSON output keeps Hz)."""
    from ..control.values import format_freq

    return " ".join(
        f"{k.removesuffix('_hz')}={format_freq(v)}"
        if k.endswith("_hz") and isinstance(v, int) and not isinstance(v, bool) and v > 0
        else f"{k}={v}"
        for k, v in knobs.items()
    )


@dataclass(frozen=True)
class Trial:
    """A measured point (time and mean power per unit of work) or a failed one."""

    knobs: Knobs
    time_s: float | None = None
    power_w: float | None = None
    failed: str | None = None
    """Why the point could not run (out of memory, needs a reboot...); None when measured."""
    infeasible: str | None = None
    """Why a measured point breaks a constraint its time and power cannot show (a load
    scenario's missed deadlines); None when it does not."""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    metrics: Mapping[str, float] = field(default_factory=dict, compare=False)
    """Named figures an objective reads besides time and power (an interleaved workload's
    ``train_minibatches_per_s`` and ``latency_p99_s``: :data:`~.objective.METRICS_OF`);
    each a finite number >= 0."""

    def __post_init__(self) -> None:
        if self.failed is None:
            for name, value in (("time_s", self.time_s), ("power_w", self.power_w)):
                if value is None or not math.isfinite(value) or value <= 0:
                    raise ValueError(
                        f"trial {self.knobs}: {name} {value!r} is not a positive number"
                    )
        for name, figure in self.metrics.items():
            if (
                not isinstance(figure, (int, float))
                or isinstance(figure, bool)
                or not math.isfinite(figure)
                or figure < 0
            ):
                raise ValueError(
                    f"trial {self.knobs}: metric {name} {figure!r} is not a number >= 0"
                )

    @property
    def ok(self) -> bool:
        return self.failed is None

    @property
    def measured(self) -> tuple[float, float]:
        """(time_s, power_w) of a measured trial (a failed one has none: ValueError)."""
        if self.time_s is None or self.power_w is None:
            raise ValueError(f"trial {self.knobs} failed ({self.failed}): nothing measured")
        return self.time_s, self.power_w

    @property
    def energy_j(self) -> float | None:
        if self.time_s is None or self.power_w is None:
            return None
        return self.time_s * self.power_w

    def key(self, names: tuple[str, ...]) -> tuple[KnobValue, ...]:
        return tuple(self.knobs[n] for n in names)

    def to_json(self) -> dict[str, Any]:
        return {
            "knobs": dict(self.knobs),
            "time_s": self.time_s,
            "power_w": self.power_w,
            "energy_j": self.energy_j,
            "failed": self.failed,
            **({"infeasible": self.infeasible} if self.infeasible is not None else {}),
            **({"metrics": dict(self.metrics)} if self.metrics else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trial:
        """A trial as :meth:`to_json` wrote it (a resumed search's history)."""
        return cls(
            knobs=dict(data["knobs"]),
            time_s=data.get("time_s"),
            power_w=data.get("power_w"),
            failed=data.get("failed"),
            infeasible=data.get("infeasible"),
            metrics=dict(data.get("metrics") or {}),
        )
