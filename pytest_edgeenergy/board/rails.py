"""Discover the board's power rails (INA3221 iio/hwmon, INA238 hwmon) under a root.

Scans both ``sys/bus/i2c/devices/*/name`` and ``sys/bus/i2c/drivers/<driver>/*``; the same
device reached both ways is kept once (deduplicated by its resolved directory). Nothing
is read but names and labels: whether values can be read is the meter's business.

Choices:

* A channel is "not connected" when its label is ``NC`` or has ``NC`` as one of its
  ``_``/``-``/space separated words (``NC``, ``NC_1``); a plain substring test as jtop does
  would also drop a rail named e.g. ``VDD_SYNC``.
* INA3221 hwmon channels are taken from their ``inN_label`` files (N = 1..3): channel 7
  (sum of shunts) and in4..in6 (shunt µV) are never rails; a channel without a label is
  skipped with a note, as is one whose ``inN_enable`` is 0.
* Total rail by name, first match wins: ``VIN`` (INA238, Thor) > ``POM_5V_IN`` (Nano) >
  ``VDD_IN`` (TX2, Xavier NX, Orin NX/Nano). Otherwise the total is the sum of all rails.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import EdgeEnergyError
from .sysfs import read_int, read_text
from .types import Rail, RailChip, RailMap

I2C_DEVICES_DIR = "sys/bus/i2c/devices"
I2C_DRIVERS_DIR = "sys/bus/i2c/drivers"
DRIVERS: dict[str, RailChip] = {"ina3221": "ina3221", "ina3221x": "ina3221", "ina238": "ina238"}
TOTAL_RAIL_PREFERENCE = ("VIN", "POM_5V_IN", "VDD_IN")
SUM_NOTE = "no module-input rail on this board: total is the sum of all rails"
INA238_DEFAULT_NAME = "VIN"

_DEVICE_ID_RE = re.compile(r"^(\d+)-([0-9a-fA-F]{4})$")
_NUM_SUFFIX_RE = re.compile(r"(\d+)$")


class NoRailsFound(EdgeEnergyError, OSError):
    """No power-monitor rail was found under the root."""

    def __init__(self, root: Path, scanned: tuple[str, ...]) -> None:
        dirs = ", ".join(scanned)
        super().__init__(
            f"no INA3221/INA238 power rails found under {root} (scanned {dirs}); "
            "pass --edge-root with a board tree, or --edge-board=sim:MODEL"
        )
        self.root = root
        self.scanned = scanned


def scanned_dirs(root: Path) -> tuple[str, ...]:
    """The directories :func:`discover_rails` scans, as absolute paths under ``root``."""
    drivers = (str(root / I2C_DRIVERS_DIR / driver) for driver in DRIVERS)
    return (str(root / I2C_DEVICES_DIR), *drivers)


@dataclass(frozen=True)
class _Device:
    device: str
    path: Path
    chip: RailChip


def _num_suffix(name: str) -> int:
    match = _NUM_SUFFIX_RE.search(name)
    return int(match.group(1)) if match else -1


def _device_sort_key(device: _Device) -> tuple[int, int, str]:
    match = _DEVICE_ID_RE.match(device.device)
    if match is None:
        return (1 << 30, 0, device.device)
    return (int(match.group(1)), int(match.group(2), 16), device.device)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _find_devices(root: Path) -> list[_Device]:
    found: dict[Path, _Device] = {}
    drivers_dir = root / I2C_DRIVERS_DIR
    for driver, chip in DRIVERS.items():
        driver_dir = drivers_dir / driver
        try:
            entries = sorted(driver_dir.iterdir())
        except OSError:
            continue
        for entry in entries:
            if _DEVICE_ID_RE.match(entry.name) and entry.is_dir():
                found.setdefault(_resolved(entry), _Device(entry.name, entry, chip))
    try:
        device_entries = sorted((root / I2C_DEVICES_DIR).iterdir())
    except OSError:
        device_entries = []
    for entry in device_entries:
        name = read_text(entry / "name")
        if name is None or name.lower() not in DRIVERS:
            continue
        found.setdefault(_resolved(entry), _Device(entry.name, entry, DRIVERS[name.lower()]))
    return sorted(found.values(), key=_device_sort_key)


def is_not_connected(label: str) -> bool:
    """True for a channel label meaning "not connected" (see module docstring)."""
    words = re.split(r"[\s_\-]+", label.strip().upper())
    return "NC" in words


def _sorted_by_suffix(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: (_num_suffix(p.name), p.name))


class _Collector:
    def __init__(self) -> None:
        self.rails: list[Rail] = []
        self.notes: list[str] = []
        self.update_intervals_ms: list[int] = []

    def iio(self, dev: _Device) -> bool:
        iio_dirs = _sorted_by_suffix([p for p in dev.path.glob("iio:device*") if p.is_dir()])
        any_found = False
        for iio_dir in iio_dirs:
            label_files = list(iio_dir.glob("rail_name_*"))
            channels = sorted(
                int(f.name.removeprefix("rail_name_"))
                for f in label_files
                if f.name.removeprefix("rail_name_").isdigit()
            )
            for channel in channels:
                any_found = True
                label = read_text(iio_dir / f"rail_name_{channel}")
                where = f"{dev.device} {iio_dir.name} channel {channel}"
                if not label:
                    self.notes.append(f"{where}: unreadable or empty rail_name_{channel}, skipped")
                    continue
                if is_not_connected(label):
                    continue
                power = iio_dir / f"in_power{channel}_input"
                voltage = iio_dir / f"in_voltage{channel}_input"
                current = iio_dir / f"in_current{channel}_input"
                if power.is_file():
                    self.rails.append(
                        Rail(
                            label,
                            dev.chip,
                            "iio",
                            dev.device,
                            channel,
                            iio_dir,
                            power_file=power,
                            power_scale_w=1e-3,
                        )
                    )
                elif voltage.is_file() and current.is_file():
                    self.rails.append(
                        Rail(
                            label,
                            dev.chip,
                            "iio",
                            dev.device,
                            channel,
                            iio_dir,
                            voltage_file=voltage,
                            current_file=current,
                        )
                    )
                else:
                    self.notes.append(
                        f"rail {label} ({where}): neither {power.name} nor "
                        f"{voltage.name}+{current.name} exist, skipped"
                    )
        return any_found

    def _hwmon_dirs(self, dev: _Device) -> list[Path]:
        dirs = _sorted_by_suffix([p for p in (dev.path / "hwmon").glob("hwmon*") if p.is_dir()])
        for hwmon_dir in dirs:
            interval = read_int(hwmon_dir / "update_interval")
            if interval is not None and interval > 0:
                self.update_intervals_ms.append(interval)
        return dirs

    def hwmon_ina3221(self, dev: _Device) -> bool:
        any_found = False
        for hwmon_dir in self._hwmon_dirs(dev):
            channels = sorted(
                {_num_suffix(f.name.removesuffix("_label")) for f in hwmon_dir.glob("in*_label")}
                | {_num_suffix(f.name.removesuffix("_input")) for f in hwmon_dir.glob("in*_input")}
            )
            for channel in channels:
                # Only 1..3 are rails: in4..6 are shunt voltages, in7 the sum of shunts.
                if channel not in (1, 2, 3):
                    continue
                any_found = True
                where = f"{dev.device} {hwmon_dir.name} channel {channel}"
                label = read_text(hwmon_dir / f"in{channel}_label")
                if not label:
                    self.notes.append(f"{where}: no in{channel}_label, skipped")
                    continue
                if is_not_connected(label):
                    continue
                if read_int(hwmon_dir / f"in{channel}_enable") == 0:
                    self.notes.append(f"rail {label} ({where}): disabled (in{channel}_enable=0)")
                    continue
                voltage = hwmon_dir / f"in{channel}_input"
                current = hwmon_dir / f"curr{channel}_input"
                if voltage.is_file() and current.is_file():
                    self.rails.append(
                        Rail(
                            label,
                            "ina3221",
                            "hwmon",
                            dev.device,
                            channel,
                            hwmon_dir,
                            voltage_file=voltage,
                            current_file=current,
                        )
                    )
                else:
                    self.notes.append(
                        f"rail {label} ({where}): {voltage.name} or {current.name} missing, skipped"
                    )
        return any_found

    def hwmon_ina238(self, dev: _Device) -> bool:
        any_found = False
        for hwmon_dir in self._hwmon_dirs(dev):
            any_found = True
            label = read_text(hwmon_dir / "in1_label") or INA238_DEFAULT_NAME
            where = f"{dev.device} {hwmon_dir.name}"
            if is_not_connected(label):
                continue
            power = hwmon_dir / "power1_input"
            voltage = hwmon_dir / "in1_input"
            current = hwmon_dir / "curr1_input"
            if power.is_file():
                self.rails.append(
                    Rail(
                        label,
                        "ina238",
                        "hwmon",
                        dev.device,
                        1,
                        hwmon_dir,
                        power_file=power,
                        power_scale_w=1e-6,
                    )
                )
            elif voltage.is_file() and current.is_file():
                self.rails.append(
                    Rail(
                        label,
                        "ina238",
                        "hwmon",
                        dev.device,
                        1,
                        hwmon_dir,
                        voltage_file=voltage,
                        current_file=current,
                    )
                )
            else:
                self.notes.append(
                    f"rail {label} ({where}): neither power1_input nor in1_input+curr1_input "
                    "exist, skipped"
                )
        return any_found


def _disambiguate(rails: list[Rail], notes: list[str]) -> list[Rail]:
    counts: dict[str, int] = {}
    for rail in rails:
        counts[rail.name] = counts.get(rail.name, 0) + 1
    renamed = [
        dataclasses.replace(rail, name=f"{rail.name}@{rail.device}")
        if counts[rail.name] > 1
        else rail
        for rail in rails
    ]
    for name, count in counts.items():
        if count > 1:
            devices = ", ".join(r.device for r in rails if r.name == name)
            notes.append(
                f"rail name {name} appears on {count} channels ({devices}): named {name}@DEVICE"
            )
    # Two channels of one chip with the same label: add the channel as well.
    seen: dict[str, int] = {}
    for rail in renamed:
        seen[rail.name] = seen.get(rail.name, 0) + 1
    return [
        dataclasses.replace(rail, name=f"{rail.name}:{rail.channel}")
        if seen[rail.name] > 1
        else rail
        for rail in renamed
    ]


def _base_name(rail: Rail) -> str:
    return rail.name.split("@", 1)[0]


def discover_rails(root: Path) -> RailMap:
    """Find every power rail under ``root``; an empty :class:`RailMap` when there is none."""
    collector = _Collector()
    for dev in _find_devices(root):
        if dev.chip == "ina238":
            found = collector.hwmon_ina238(dev)
        else:
            found = collector.iio(dev) or collector.hwmon_ina3221(dev)
        if not found:
            collector.notes.append(
                f"{dev.chip} device {dev.device}: no iio:device* or hwmon/hwmon* channels"
            )
    rails = _disambiguate(collector.rails, collector.notes)
    notes = collector.notes

    total: str | None = None
    for wanted in TOTAL_RAIL_PREFERENCE:
        match = next((r for r in rails if _base_name(r) == wanted), None)
        if match is not None:
            total = match.name
            break
    if total is not None:
        rails = [dataclasses.replace(r, is_total=True) if r.name == total else r for r in rails]
    elif rails:
        notes.append(SUM_NOTE)

    interval_s = (
        max(collector.update_intervals_ms) / 1000.0 if collector.update_intervals_ms else None
    )
    return RailMap(
        rails=tuple(rails),
        total_rail=total,
        update_interval_s=interval_s,
        notes=tuple(notes),
    )


def require_rails(rail_map: RailMap, root: Path) -> RailMap:
    """Return ``rail_map`` unchanged, or raise :class:`NoRailsFound` when it is empty."""
    if not rail_map.rails:
        raise NoRailsFound(root, scanned_dirs(root))
    return rail_map
