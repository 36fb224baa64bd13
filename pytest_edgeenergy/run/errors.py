"""The errors of the measuring layer, typed so that each front end words them its own way.

The pytest plugin turns them into a usage error, a failed or a skipped test at its edge;
the ``edgeenergy`` command into ``edgeenergy: <message>`` and exit 2; a script sees them
as they are. Nothing parses a message back: what a front end needs is an attribute.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import EdgeEnergyError

__all__ = [
    "BoardSetupError",
    "CommandNotStarted",
    "NoPowerMonitor",
    "PinRefused",
    "PointError",
    "SearchSetupError",
    "SessionClosed",
    "TrialSkipped",
    "Unlocked",
    "WrongThread",
]


class BoardSetupError(EdgeEnergyError, OSError):
    """The board could not be set up; the message says what was looked for and what to do."""


class NoPowerMonitor(BoardSetupError):
    """No INA3221/INA238 power monitor under ``root`` (a machine without a Jetson, or a
    wrong root). Front ends name their own way to a virtual board."""

    def __init__(self, root: Path, how: str) -> None:
        self.root = root
        super().__init__(
            f"no power monitor (INA3221/INA238) found under {root}: on a machine without a "
            f"Jetson {how}"
        )


class PointError(EdgeEnergyError, ValueError):
    """Operating-point values this board cannot take (a frequency it does not offer, an
    unknown mode...): nothing was written."""


class PinRefused(EdgeEnergyError):
    """The board refused an operating point while it was applied (a write failed, a mode
    needs a reboot...); ``point_id`` names the point, ``reason`` says why."""

    def __init__(self, point_id: str, reason: str) -> None:
        self.point_id = point_id
        self.reason = reason
        super().__init__(f"operating point {point_id} could not be applied: {reason}")


class SearchSetupError(EdgeEnergyError, ValueError):
    """An operating-point search that cannot run as asked (nothing to search, a budget no
    point can meet, a prior that cannot serve...): found before any trial runs."""


class TrialSkipped(EdgeEnergyError):
    """A trial slot that runs nothing: taken over from a resumed report, a strategy with
    nothing left to try, or a point the board refused (then recorded as a failed trial)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class CommandNotStarted(EdgeEnergyError, OSError):
    """A command to measure could not be started (no such program, not executable)."""


class SessionClosed(EdgeEnergyError, RuntimeError):
    """The session is used outside its ``with`` block (not opened yet, or closed)."""


class Unlocked(EdgeEnergyError, RuntimeError):
    """A pin asked of a session opened with ``lock=False`` (measure only): it holds no
    lock, so it may not change the board."""


class WrongThread(EdgeEnergyError, RuntimeError):
    """The session is used from a thread other than the one that opened it (it pins and
    measures its board from that thread alone)."""
