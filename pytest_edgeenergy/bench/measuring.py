"""What ``edge_bench`` needs from the measuring session that runs it.

The run layer's :class:`pytest_edgeenergy.run.EnergySession` is one (the pytest plugin gives
its session's); the bench engine names only this protocol, so it depends on neither.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..board.detect import Board
    from ..control.knobset import KnobSet
    from ..control.operating_point import OperatingPoint
    from ..meters.meter import Meter, Window, WindowResult

__all__ = ["MeasuringSession", "WindowHandle"]


class WindowHandle(Protocol):
    """An energy window in progress."""

    def end(self) -> WindowResult:
        """Close the window and return its result."""
        ...


class MeasuringSession(Protocol):
    """A board with a running meter, attributing windows to tests."""

    @property
    def board(self) -> Board | None: ...

    @property
    def knobs(self) -> KnobSet | None:
        """The board's knob set (the allow-list its frequency residency reads)."""
        ...

    @property
    def meter(self) -> Meter | None: ...

    @property
    def simulated(self) -> bool: ...

    @property
    def current_point(self) -> OperatingPoint | None: ...

    def open(self) -> None:
        """Set up the board and start the meter (idempotent)."""
        ...

    def begin(self, nodeid: str, label: str) -> WindowHandle:
        """Open a window attributed to test ``nodeid``."""
        ...

    def measure(self, nodeid: str, label: str) -> AbstractContextManager[Window]:
        """Measure a ``with`` body as one window attributed to test ``nodeid``."""
        ...
