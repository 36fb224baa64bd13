"""Operating points as values: what is pinned (power mode, CPU/GPU/EMC clocks, cores,
governor), and the power mode a board is in. Plain data; no board is read here.

An :class:`OperatingPoint` field left at None is not pinned. :data:`DVFS` pins nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .values import format_freq

DIMENSIONS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
"""Keys of a point spec / grid options, in the order they appear in ids."""


@dataclass(frozen=True)
class CurrentMode:
    """The power mode a board is in, and where that was read."""

    id: int
    name: str | None
    via: str
    """``nvpmodel -q`` or the status file."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "via": self.via}


@dataclass(frozen=True)
class OperatingPoint:
    """One operating point; every field optional (None = not pinned)."""

    power_mode: str | None = None
    """nvpmodel mode name as the board's conf spells it (a role such as ``max`` is resolved
    to this board's mode; the role is kept in :attr:`words`)."""
    cpu_freq_hz: int | None = None
    gpu_freq_hz: int | None = None
    emc_freq_hz: int | None = None
    cpu_cores: int | None = None
    """Number of online cores (cpu0 .. cpuN-1)."""
    governor: str | None = None
    """CPU scaling governor."""
    words: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """``(field, word)`` for fields asked for by a word (``gpu_freq_hz`` by ``min``,
    ``power_mode`` by ``max``), so reports can join the same request across boards; not
    part of the point's identity."""

    @property
    def is_dvfs(self) -> bool:
        """True when nothing at all is pinned."""
        return self == DVFS

    @property
    def id(self) -> str:
        """Readable id: ``15W-gpu612MHz-cpu1.4976GHz-emc2.133GHz-4cores-performance``;
        ``dvfs`` when nothing is pinned."""
        parts: list[str] = []
        if self.power_mode is not None:
            parts.append(self.power_mode)
        if self.gpu_freq_hz is not None:
            parts.append("gpu" + format_freq(self.gpu_freq_hz))
        if self.cpu_freq_hz is not None:
            parts.append("cpu" + format_freq(self.cpu_freq_hz))
        if self.emc_freq_hz is not None:
            parts.append("emc" + format_freq(self.emc_freq_hz))
        if self.cpu_cores is not None:
            parts.append(f"{self.cpu_cores}core" + ("s" if self.cpu_cores != 1 else ""))
        if self.governor is not None:
            parts.append(self.governor)
        return "-".join(parts) if parts else "dvfs"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "power_mode": self.power_mode,
            "cpu_freq_hz": self.cpu_freq_hz,
            "gpu_freq_hz": self.gpu_freq_hz,
            "emc_freq_hz": self.emc_freq_hz,
            "cpu_cores": self.cpu_cores,
            "governor": self.governor,
        }
        if self.words:
            out["as"] = dict(self.words)
        return out


DVFS = OperatingPoint()
"""Nothing pinned: the board's default governors (and the session's power mode)."""


@dataclass(frozen=True)
class PointSpec:
    """Raw values for one point as the user wrote them, and where each came from."""

    power_mode: str | None = None
    cpu_freq: str | None = None
    gpu_freq: str | None = None
    emc_freq: str | None = None
    cpu_cores: str | None = None
    governor: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    def items(self) -> list[tuple[str, str]]:
        return [(k, v) for k in DIMENSIONS if (v := getattr(self, k)) is not None]
