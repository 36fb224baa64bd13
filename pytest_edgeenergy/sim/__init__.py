"""Virtual Jetson boards: trees with a real board's layout, animated by a power model.

``create(model, root)`` writes a board (``nano``, ``tx2``, ``xavier-nx``, ``agx-xavier``,
``orin-nano``, ``orin-nx``, ``agx-orin``, ``thor``); ``run(root)`` / :class:`SimProcess`
animate it; ``read_truth(root)`` gives the exact energy of what the simulator wrote.
"""

from __future__ import annotations

from .models import MODEL_NAMES, UnknownBoardModel
from .runner import NotAVirtualBoard, SimAlreadyRunning, SimProcess, SimStartError, run
from .tree import TreeNotEmpty, create
from .truth import Truth, TruthUnavailable, read_truth

__all__ = [
    "MODEL_NAMES",
    "NotAVirtualBoard",
    "SimAlreadyRunning",
    "SimProcess",
    "SimStartError",
    "TreeNotEmpty",
    "Truth",
    "TruthUnavailable",
    "UnknownBoardModel",
    "create",
    "read_truth",
    "run",
]
