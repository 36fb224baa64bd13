"""What applying an operating point needs from the session it runs in.

:class:`pytest_edgeenergy.control.state.Session` is the journal that matters: it records
every step in its state file before making it and sends unpinned knobs back to its
snapshot. :class:`DirectJournal` is the null journal of a direct application (no session):
writes happen at once, guarded by the allow-list, and unpinned knobs are left alone.
Applying depends only on this protocol, so ``operating_point`` never imports ``state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from .knobset import KnobSet
from .point import CurrentMode
from .steps import DirectRunner, StepRunner


class Journal(Protocol):
    """The session side of :func:`pytest_edgeenergy.control.operating_point.apply`."""

    @property
    def runner(self) -> StepRunner:
        """Carries out the steps (journals first, or prints in a dry run)."""
        ...

    @property
    def dry_run(self) -> bool: ...

    @property
    def force(self) -> bool: ...

    @property
    def settle_s(self) -> float: ...

    def baseline(self) -> Mapping[Path, str] | None:
        """What unpinned knob files return to (taking the snapshot first if needed)."""
        ...

    @property
    def baseline_mode(self) -> CurrentMode | None:
        """The power mode an unpinned power mode returns to."""
        ...

    @property
    def restore_forced(self) -> bool:
        """A reboot-needing power-mode switch was forced in this journal."""
        ...


class DirectJournal:
    """The null journal: direct, guarded writes; nothing recorded, no baseline."""

    dry_run = False
    force = False
    baseline_mode: CurrentMode | None = None
    restore_forced = False

    def __init__(self, knobs: KnobSet) -> None:
        self._knobs = knobs
        self.settle_s = 0.5 if knobs.real else 0.0

    @property
    def runner(self) -> StepRunner:
        return DirectRunner(self._knobs.check_writable)

    def baseline(self) -> Mapping[Path, str] | None:
        return None
