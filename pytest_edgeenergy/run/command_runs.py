"""What a measured command did (:mod:`.command`): the plan, each run and its windows, each
operating point's runs, the outcome."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..control.operating_point import OperatingPoint
    from ..meters.window import WindowResult

__all__ = [
    "DEFAULT_STOP_GRACE_S",
    "CommandOutcome",
    "CommandPlan",
    "CommandRun",
    "MarkedWindow",
    "PointRuns",
]

DEFAULT_STOP_GRACE_S = 5.0
"""How long a stopped command's group has to exit on the signal before SIGKILL."""


@dataclass(frozen=True)
class CommandPlan:
    """What to run and how often."""

    argv: tuple[str, ...]
    label: str
    """The whole run's entry (the command's marks may not use it)."""
    runs: int
    warmup: int = 0
    items: int | None = None
    """The work of one whole run, for figures per item (None: none)."""
    output: Path | None = None
    """The command's stdout and stderr, every run's, go into this file (None: passed through)."""
    stop_grace_s: float = DEFAULT_STOP_GRACE_S


@dataclass(frozen=True)
class MarkedWindow:
    """A window the command marked in one run."""

    entry: str
    items: int | None
    stamped: Literal["command", "harness", "mixed"]
    result: WindowResult


@dataclass
class CommandRun:
    """One run of the command: how it ended, its window, the windows it marked."""

    index: int
    """1-based among the measured runs (or the warm-ups) of its point."""
    returncode: int
    """As :attr:`subprocess.Popen.returncode`: its exit status, or -N when signal N ended it."""
    window: WindowResult | None
    """The whole run's window (None for a warm-up: not measured)."""
    stopped_by: str | None = None
    """``SIGINT``/``SIGTERM`` when the harness stopped it (an interrupted run)."""
    marked: list[MarkedWindow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """The marks' problems, the first ones word for word (see :class:`~.marks.MarkBook`)."""
    problem_count: int = 0
    left_running: bool = False
    """Processes of its group were still running after it exited."""
    residency: dict[str, Any] | None = None

    @property
    def status(self) -> Literal["passed", "failed", "interrupted"]:
        if self.stopped_by is not None:
            return "interrupted"
        return "passed" if self.returncode == 0 else "failed"

    @property
    def exit_text(self) -> str:
        """``exit 0``, ``exit 3``, ``killed by SIGSEGV``."""
        if self.returncode >= 0:
            return f"exit {self.returncode}"
        return f"killed by {_signal_name(-self.returncode)}"


@dataclass
class PointRuns:
    """The warm-ups and runs at one operating point (None: nothing pinned)."""

    point: OperatingPoint | None
    pinned: dict[str, Any] | None = None
    """:func:`~.pinning.pinned_info` of the point (None when nothing was pinned)."""
    warmups: list[CommandRun] = field(default_factory=list)
    runs: list[CommandRun] = field(default_factory=list)


@dataclass
class CommandOutcome:
    """Every point's runs, and what interrupted them."""

    points: list[PointRuns] = field(default_factory=list)
    interrupted: str | None = None
    """``SIGINT`` or ``SIGTERM`` when the measuring was stopped; None when it ran to the end."""
    record_keys: list[str] = field(default_factory=list)
    """The session's keys of the entries written (see :meth:`EnergySession.add_record`)."""

    @property
    def failed_runs(self) -> list[tuple[PointRuns, CommandRun]]:
        """Runs and warm-ups that exited non-zero or were killed by a signal (interrupted
        ones aside)."""
        return [(p, r) for p in self.points for r in (*p.warmups, *p.runs) if r.status == "failed"]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
