"""Intel/AMD RAPL energy counters through the Linux powercap interface (x86 hosts).

Zones live in ``<root>/sys/class/powercap/intel-rapl:N`` (top level: ``package-N``,
sometimes ``dram`` or ``psys``) and ``intel-rapl:N:M`` (subzones of package N: ``core``,
``uncore``, ``dram``). Each has ``name``, ``energy_uj`` (a counter in µJ that wraps at
``max_energy_range_uj``) and ``max_energy_range_uj``.

Subzones are *inside* their package's energy, so the total is the sum of the top-level
``package-*`` zones plus a top-level ``dram`` zone, listed in :attr:`RaplSource.sum_channels`;
summing every channel would count cores and uncore twice. ``psys`` (whole platform, which
already contains the packages) is reported as a channel but left out of the total.
``intel-rapl-mmio:*`` zones are a second interface to the same package counters and are
ignored for the same reason.
"""

from __future__ import annotations

import errno
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..board.types import TotalMethod
from .source import Quantity, ReadError, SourceUnavailable

POWERCAP_RELPATH = Path("sys/class/powercap")
VIRTUAL_BOARD_MARKER = Path("etc/edgeenergy-virtual-board.json")
RAPL_UPDATE_INTERVAL_S = 0.001
"""RAPL counters update about every millisecond."""

_ZONE_RE = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")
_PERMISSION_HINT = (
    "since Linux 5.10 energy_uj is readable by root only; run as root, or grant read "
    "access, e.g. `sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj "
    "/sys/class/powercap/intel-rapl:*:*/energy_uj` (or a udev rule doing the same at boot)"
)


@dataclass(frozen=True)
class RaplZone:
    """One powercap RAPL zone."""

    zone_id: tuple[int, ...]
    """``(0,)`` for ``intel-rapl:0``, ``(0, 1)`` for the subzone ``intel-rapl:0:1``."""
    name: str
    channel: str
    energy_file: Path
    max_energy_range_uj: int

    @property
    def top_level(self) -> bool:
        return len(self.zone_id) == 1

    @property
    def in_total(self) -> bool:
        """Whether this zone adds to the total (top-level package or dram)."""
        return self.top_level and (self.name.startswith("package") or self.name == "dram")


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace").strip()


def _read_counter_uj(path: Path) -> int:
    """The counter in µJ; raises OSError or ValueError."""
    return int(_read_text(path))


def discover_zones(root: Path) -> tuple[RaplZone, ...]:
    """RAPL zones under ``root``, ordered by zone id; duplicate names get ``@N:M``."""
    base = root / POWERCAP_RELPATH
    found: list[tuple[tuple[int, ...], str, Path]] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return ()
    for entry in entries:
        m = _ZONE_RE.match(entry.name)
        if m is None:
            continue
        zone_id = tuple(int(g) for g in m.groups() if g is not None)
        try:
            name = _read_text(entry / "name")
        except OSError:
            continue
        if not name or not (entry / "energy_uj").exists():
            continue
        found.append((zone_id, name, entry))
    found.sort(key=lambda z: z[0])
    counts = Counter(name for _, name, _ in found)
    zones: list[RaplZone] = []
    for zone_id, name, entry in found:
        channel = name if counts[name] == 1 else f"{name}@{':'.join(map(str, zone_id))}"
        range_file = entry / "max_energy_range_uj"
        try:
            max_range_uj = _read_counter_uj(range_file)
        except (OSError, ValueError) as exc:
            raise SourceUnavailable(
                f"cannot read {range_file} (needed to unwrap the energy counter): {exc}"
            ) from exc
        zones.append(RaplZone(zone_id, name, channel, entry / "energy_uj", max_range_uj))
    return tuple(zones)


class RaplSource:
    """Cumulative energy (J) per RAPL zone, unwrapped across counter wrap-around.

    Wrap-around is detected when a reading is lower than the previous one, so the source
    must be read at least once per wrap period (about ``max_energy_range_uj`` / power:
    tens of minutes for a 262 kJ range at 200 W).
    """

    name = "rapl"

    def __init__(self, root: Path) -> None:
        self._root = root
        self.zones = discover_zones(root)
        if not self.zones:
            raise SourceUnavailable(
                f"no RAPL zones under {root / POWERCAP_RELPATH} (intel-rapl:*): not an x86 "
                "host with the intel_rapl powercap driver loaded (`modprobe intel_rapl_msr`)"
            )
        self._last_uj: list[int] = []
        self._offset_uj: list[int] = [0] * len(self.zones)
        for zone in self.zones:
            try:
                self._last_uj.append(_read_counter_uj(zone.energy_file))
            except PermissionError as exc:
                raise SourceUnavailable(
                    f"cannot read {zone.energy_file}: permission denied; {_PERMISSION_HINT}"
                ) from exc
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM):
                    raise SourceUnavailable(
                        f"cannot read {zone.energy_file}: permission denied; {_PERMISSION_HINT}"
                    ) from exc
                raise SourceUnavailable(f"cannot read {zone.energy_file}: {exc}") from exc
            except ValueError as exc:
                raise SourceUnavailable(
                    f"{zone.energy_file} does not hold an integer counter: {exc}"
                ) from exc
        self._channels = tuple(z.channel for z in self.zones)
        self.sum_channels: tuple[str, ...] = tuple(z.channel for z in self.zones if z.in_total)
        """Channels whose sum is the total; the others are parts of these (or psys)."""

    @property
    def quantity(self) -> Quantity:
        return "energy_j"

    @property
    def channels(self) -> tuple[str, ...]:
        return self._channels

    @property
    def total_channel(self) -> str | None:
        return None

    @property
    def total_method(self) -> TotalMethod:
        return "sum"

    @property
    def min_interval_s(self) -> float | None:
        return RAPL_UPDATE_INTERVAL_S

    @property
    def simulated(self) -> bool:
        return (self._root / VIRTUAL_BOARD_MARKER).exists()

    def total_j(self, values: Sequence[float]) -> float:
        """Total energy from one :meth:`read` result: the sum over :attr:`sum_channels`."""
        return sum(v for z, v in zip(self.zones, values, strict=True) if z.in_total)

    def read(self) -> Sequence[float]:
        """Unwrapped cumulative energy in J per zone."""
        values: list[float] = []
        for i, zone in enumerate(self.zones):
            try:
                raw_uj = _read_counter_uj(zone.energy_file)
            except OSError as exc:
                raise ReadError(zone.channel, f"{zone.energy_file}: {exc.strerror or exc}") from exc
            except ValueError as exc:
                raise ReadError(zone.channel, f"{zone.energy_file}: not an integer") from exc
            if raw_uj < self._last_uj[i]:
                self._offset_uj[i] += zone.max_energy_range_uj + 1
            self._last_uj[i] = raw_uj
            values.append((raw_uj + self._offset_uj[i]) / 1e6)
        return values

    def close(self) -> None:
        """Nothing to release: every read opens and closes its files."""

    def __enter__(self) -> RaplSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
