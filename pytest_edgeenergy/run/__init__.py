"""The measuring layer without pytest: :class:`EnergySession` opens a board (a Jetson, a
board tree or a virtual board), takes its lock, measures the idle baseline, pins operating
points and restores them, measures energy windows and writes the report.

The pytest plugin (:mod:`pytest_edgeenergy.plugin`) and the ``edgeenergy measure`` command
are front ends over it; scripts and notebooks use it directly::

    from pytest_edgeenergy import EnergySession

    with EnergySession(board="sim:orin-nano", report="r.json") as s, s.pinned(gpu_freq="max"):
        with s.window("inference") as w:
            run()
    print(w.result.total.energy_j)

Modules: :mod:`.target` (which board: ``sim:MODEL``, ``auto``, a root), :mod:`.session`
(the session), :mod:`.report` (the report's writer and entries), :mod:`.records` (what a
test or window measured), :mod:`.pinning`, :mod:`.warnings` (doubtful figures),
:mod:`.search` (operating-point searches on the live board), :mod:`.errors`.
"""

from __future__ import annotations

from .errors import (
    BoardSetupError,
    NoPowerMonitor,
    PinRefused,
    PointError,
    SearchSetupError,
    SessionClosed,
    TrialSkipped,
    Unlocked,
    WrongThread,
)
from .session import EnergySession
from .target import BoardTarget, parse_board

__all__ = [
    "BoardSetupError",
    "BoardTarget",
    "EnergySession",
    "NoPowerMonitor",
    "PinRefused",
    "PointError",
    "SearchSetupError",
    "SessionClosed",
    "TrialSkipped",
    "Unlocked",
    "WrongThread",
    "parse_board",
]
