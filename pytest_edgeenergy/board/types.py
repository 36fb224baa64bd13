"""Plain values describing a board: identity and power rails.

Every path held here is absolute and already joined with the board's root, so that the
code reading a board at ``/`` and the code reading a virtual board under ``/tmp/x`` is the
same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

TotalMethod = Literal["rail", "sum"]


@dataclass(frozen=True)
class Identity:
    """Who the board is, read from identity files under the root."""

    model: str | None
    """``/proc/device-tree/model`` without its trailing NUL, e.g. ``NVIDIA Jetson Nano ...``."""
    compatible: tuple[str, ...] = ()
    """``/proc/device-tree/compatible`` split on NUL,
    e.g. ``("nvidia,p3767-0005", "nvidia,tegra234")``."""
    soc: str | None = None
    """SoC family: ``tegra210``, ``tegra186``, ``tegra194``, ``tegra234`` or ``tegra264``."""
    module: str | None = None
    """Module P-number when known, e.g. ``p3767-0005``."""
    l4t: str | None = None
    """L4T release as ``MAJOR.MINOR.PATCH`` from ``/etc/nv_tegra_release``, e.g. ``36.4.7``."""
    jetpack: str | None = None
    """JetPack release mapped from the L4T release, e.g. ``6.2.1``; None when unknown."""
    kernel: str | None = None
    """Kernel release (``/proc/sys/kernel/osrelease``), e.g. ``5.15.148-tegra``."""
    simulated: bool = False
    """True when the root is a virtual board written by :mod:`pytest_edgeenergy.sim`."""
    sim_model: str | None = None
    """The virtual board's model name (``nano`` ... ``thor``) when simulated."""


RailChip = Literal["ina3221", "ina238"]
RailLayout = Literal["iio", "hwmon"]


@dataclass(frozen=True)
class Rail:
    """One power-monitor channel and the files that give its power.

    Power in watts is either ``power_file`` * ``power_scale_w`` (iio ``in_powerN_input`` in
    mW: 1e-3; INA238 ``power1_input`` in µW: 1e-6), or, where the driver exposes no power
    file (hwmon INA3221), ``voltage_file`` [mV] * ``current_file`` [mA] * 1e-6.
    """

    name: str
    chip: RailChip
    layout: RailLayout
    device: str
    """I2C device id, e.g. ``1-0040``."""
    channel: int
    """Channel number as it appears in the file names (iio 0..2, hwmon 1..3)."""
    directory: Path
    power_file: Path | None = None
    power_scale_w: float = 1e-3
    voltage_file: Path | None = None
    """Bus voltage, mV."""
    current_file: Path | None = None
    """Current, mA."""
    is_total: bool = False

    @property
    def files(self) -> tuple[Path, ...]:
        """The files a reader must read for one power value, in order."""
        if self.power_file is not None:
            return (self.power_file,)
        assert self.voltage_file is not None and self.current_file is not None
        return (self.voltage_file, self.current_file)


@dataclass(frozen=True)
class RailMap:
    """All rails of a board and how its total power is formed."""

    rails: tuple[Rail, ...]
    total_rail: str | None
    """Name of the rail that measures the whole input (``VDD_IN``, ``POM_5V_IN``, ``VIN``),
    or None when the board has none and the total is the sum of all rails."""
    update_interval_s: float | None = None
    """Slowest sensor update period the board exposes (hwmon ``update_interval``), or None
    when the board does not say."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Human-readable remarks, e.g. why the total is a sum."""

    @property
    def total_method(self) -> TotalMethod:
        return "rail" if self.total_rail is not None else "sum"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rails)
