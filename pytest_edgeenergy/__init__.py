"""pytest-edgeenergy: energy of deep-learning workloads on NVIDIA Jetson boards.

``from pytest_edgeenergy import EnergySession`` gives the measuring session for scripts and
notebooks (:class:`pytest_edgeenergy.run.EnergySession`); it is imported on first use, so
importing the package stays cheap (and never imports pytest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

__all__ = ["EnergySession", "__version__"]

if TYPE_CHECKING:
    from .run.session import EnergySession


def __getattr__(name: str) -> Any:
    if name == "EnergySession":
        from .run.session import EnergySession

        return EnergySession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
