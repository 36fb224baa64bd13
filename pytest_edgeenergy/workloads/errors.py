"""Errors raised by the workload builders."""

from __future__ import annotations

from ..errors import EdgeEnergyError


class WorkloadError(EdgeEnergyError, ValueError):
    """A bad workload argument (unknown name, batch size < 1...); the message says what is
    allowed."""


class CombinationUnsupported(EdgeEnergyError, RuntimeError):
    """A (workload, graph mode, precision, device) combination that cannot run here.

    The suites turn it into ``pytest.skip(reason)``: a combination is skipped with its
    reason, never silently dropped.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LocalFileError(EdgeEnergyError, ValueError):
    """A user-supplied weights file or data directory that cannot be used; the message names
    the path and what is wrong with it."""
