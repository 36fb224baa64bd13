"""The Jetson generations the project knows, by the short names users type.

These names select virtual boards (``--edge-board=sim:MODEL``, ``edgeenergy sim create``);
the generation's data lives in :mod:`pytest_edgeenergy.sim.models`.
"""

from __future__ import annotations

MODEL_NAMES: tuple[str, ...] = (
    "nano",
    "tx2",
    "xavier-nx",
    "agx-xavier",
    "orin-nano",
    "orin-nx",
    "agx-orin",
    "thor",
)
