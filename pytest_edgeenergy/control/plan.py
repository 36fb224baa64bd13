"""The one protocol every knob implements, and what it is told when asked to plan.

A knob is an operation in pyperf's ``system tune`` sense: it can *show* its state, *plan*
the steps that bring it to an operating point, *apply* them through a runner, *verify* the
read-back, and report *drift* later. Restoring is planning with the knob's field unpinned:
the plan then puts its files back to :attr:`PlanContext.baseline` (the session's snapshot),
as pyperf resets with ``tune=False``. Applying a point is one loop over the knobs, in the
order of :func:`pytest_edgeenergy.control.operating_point.point_knobs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .point import CurrentMode, OperatingPoint
from .steps import Mismatch, StepRunner, ToolCall, Write

StepT = TypeVar("StepT", Write, ToolCall)

Baseline = Mapping[Path, str]
"""Snapshot values (stripped text) by path; what an unpinned knob returns to."""


@dataclass(frozen=True)
class PlanContext:
    """Everything beyond the point that a knob's plan depends on."""

    baseline: Baseline | None = None
    """What unpinned files return to; None leaves them as they are (no session)."""
    baseline_mode: CurrentMode | None = None
    """The power mode an unpinned power mode returns to (the session's snapshot)."""
    force: bool = False
    """Allow a power-mode switch that needs a reboot."""
    restore_forced: bool = False
    """The session already forced such a switch: returning from it needs force too."""
    live_online: bool = False
    """With cores unpinned, skip cpufreq policies whose CPUs are offline now (read live)."""
    running: bool = False
    """Check the rate a clock runs at rather than the one requested (drift checks)."""


class Knob(Protocol[StepT]):
    """One knob of the board (cores, cpufreq, GPU, EMC, power mode) as an operation."""

    name: str

    def show(self) -> dict[str, Any]:
        """The knob as it reads now."""
        ...

    def files_for(self, point: OperatingPoint) -> tuple[Path, ...]:
        """Files applying ``point`` (and restoring afterwards) may write; empty when the
        point does not pin this knob."""
        ...

    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[StepT]:
        """Steps that pin what ``point`` pins here and return the rest to the baseline."""
        ...

    def apply(self, steps: Sequence[StepT], runner: StepRunner | None = None) -> None:
        """Carry out planned steps in order (through ``runner``; default: direct)."""
        ...

    def expect_point(self, point: OperatingPoint, ctx: PlanContext) -> None:
        """After :meth:`apply`: also verify the values ``point`` pins that needed no step."""
        ...

    def verify(self) -> list[Mismatch]:
        """What reads back differently from what was applied or expected."""
        ...

    def drift(self, point: OperatingPoint, ctx: PlanContext) -> list[str]:
        """What no longer matches ``point`` (something changed the knob behind our back)."""
        ...
