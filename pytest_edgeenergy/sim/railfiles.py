"""The power-monitor files of a virtual board: layout, static files and live values.

:func:`write_static` creates a chip's files; :class:`RailWriter` keeps the live files open
and writes quantised values the way each driver shows them, returning the power a reader
will compute from what was written (the ground truth).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .files import live_bytes, relative_symlink, write_live, write_text
from .models import NC, BoardModel, ChipSpec

VOLTAGE_STEP_MV = 8
"""INA3221 bus-voltage LSB; the written voltage droops in these steps with current."""


@dataclass(frozen=True)
class RailFiles:
    """Live files of one connected rail, relative to the root."""

    name: str
    kind: str
    """``iio`` (V, I, P mW), ``hwmon`` (V, I, shunt µV) or ``ina238`` (V, I, P µW)."""
    voltage: str
    current: str
    power: str | None
    shunt: str | None
    shunt_uohm: int
    voltage_mv: int
    sum_file: str | None
    """``in7_input`` of the chip (hwmon): sum of the shunt voltages."""


def rail_files(model: BoardModel) -> list[RailFiles]:
    """Live files of every connected rail, in ``model.rail_names`` order."""
    out: list[RailFiles] = []
    for chip in model.chips:
        d = chip.data_dir
        for i, name in enumerate(chip.channels):
            if name == NC:
                continue
            n = chip.first_channel + i
            v_mv = model.rail(name).voltage_mv
            if chip.driver == "ina3221x":
                out.append(
                    RailFiles(
                        name,
                        "iio",
                        f"{d}/in_voltage{n}_input",
                        f"{d}/in_current{n}_input",
                        f"{d}/in_power{n}_input",
                        None,
                        chip.shunt_uohm,
                        v_mv,
                        None,
                    )
                )
            elif chip.driver == "ina3221":
                out.append(
                    RailFiles(
                        name,
                        "hwmon",
                        f"{d}/in{n}_input",
                        f"{d}/curr{n}_input",
                        None,
                        f"{d}/in{n + 3}_input",
                        chip.shunt_uohm,
                        v_mv,
                        f"{d}/in7_input",
                    )
                )
            else:
                out.append(
                    RailFiles(
                        name,
                        "ina238",
                        f"{d}/in1_input",
                        f"{d}/curr1_input",
                        f"{d}/power1_input",
                        None,
                        chip.shunt_uohm,
                        v_mv,
                        None,
                    )
                )
    return out


def quantise(kind: str, voltage_mv: int, power_w: float) -> tuple[int, int, int, float]:
    """(mV, mA, power-file value, power a reader computes in W) for ``power_w`` on a rail.

    hwmon power is V·I; iio writes mW = V·I/1000; INA238 writes µW = V·I.
    """
    p = max(0.0, power_w)
    current0_ma = p * 1e6 / voltage_mv
    # 8 mV of droop per 0.5 A, at most about 2 % of the nominal voltage.
    droop_steps = min(round(current0_ma / 500.0), voltage_mv // (50 * VOLTAGE_STEP_MV))
    v = voltage_mv - VOLTAGE_STEP_MV * droop_steps
    i = round(p * 1e6 / v)
    if kind == "iio":
        mw = round(v * i / 1000)
        return v, i, mw, mw / 1000.0
    if kind == "ina238":
        uw = v * i
        return v, i, uw, uw / 1e6
    return v, i, 0, v * i / 1e6


def _chip_links(root: Path, chip: ChipSpec) -> None:
    dev = chip.device_dir
    relative_symlink(root, f"sys/bus/i2c/devices/{chip.device}", dev)
    relative_symlink(root, f"sys/bus/i2c/drivers/{chip.driver}/{chip.device}", dev)
    relative_symlink(root, f"{dev}/driver", f"sys/bus/i2c/drivers/{chip.driver}")
    relative_symlink(root, f"{dev}/subsystem", "sys/bus/i2c")
    if chip.layout == "iio":
        relative_symlink(root, f"sys/bus/iio/devices/iio:device{chip.index}", chip.data_dir)
    else:
        relative_symlink(root, f"sys/class/hwmon/hwmon{chip.index}", chip.data_dir)
        relative_symlink(root, f"{chip.data_dir}/device", dev)


def _limits_ma(voltage_mv: int, peak_w: float) -> tuple[int, int]:
    warn = int(peak_w * 1.5 * 1e6 / voltage_mv)
    return warn, int(warn * 4 / 3)


def write_static(
    root: Path, model: BoardModel, chip: ChipSpec, peak_w: dict[str, float], interval_ms: float
) -> None:
    """Create one chip's device directory, bus/driver links and static files."""
    dev = root / chip.device_dir
    data = root / chip.data_dir
    data.mkdir(parents=True, exist_ok=True)
    write_text(dev / "name", f"{chip.driver}\n")
    write_text(dev / "modalias", f"i2c:{chip.driver}\n")
    _chip_links(root, chip)
    if chip.driver == "ina3221x":
        write_text(data / "name", "ina3221x\n")
        write_text(data / "running_mode", "1\n")
        for i, name in enumerate(chip.channels):
            rail_v = model.rail(name).voltage_mv if name != NC else 0
            warn, crit = _limits_ma(rail_v or 5000, peak_w.get(name, 1.0))
            write_text(data / f"rail_name_{i}", f"{name}\n")
            write_text(data / f"warn_current_limit_{i}", f"{warn}\n")
            write_text(data / f"crit_current_limit_{i}", f"{crit}\n")
            for stem in ("in_voltage", "in_current", "in_power"):
                write_live(data / f"{stem}{i}_input", 0)
        return
    write_text(data / "name", f"{chip.driver}\n")
    write_text(data / "update_interval", f"{max(1, round(interval_ms))}\n")
    if chip.driver == "ina238":
        name = chip.channels[0]
        warn, _ = _limits_ma(model.rail(name).voltage_mv, peak_w.get(name, 1.0))
        write_text(data / "shunt_resistor", f"{chip.shunt_uohm}\n")
        write_text(data / "power1_max", f"{int(peak_w.get(name, 1.0) * 2e6)}\n")
        write_text(data / "curr1_max", f"{warn}\n")
        write_text(data / "in0_input", "0\n")
        write_text(data / "temp1_input", "45000\n")
        for stem in ("in1_input", "curr1_input", "power1_input"):
            write_live(data / stem, 0)
        return
    write_text(data / "samples", "4\n")
    write_text(data / "in7_label", "sum of shunt voltages\n")
    write_live(data / "in7_input", 0)
    for i, name in enumerate(chip.channels):
        n = i + 1
        connected = name != NC
        rail_v = model.rail(name).voltage_mv if connected else 5000
        warn, crit = _limits_ma(rail_v, peak_w.get(name, 1.0))
        write_text(data / f"in{n}_label", f"{name}\n")
        write_text(data / f"in{n}_enable", "1\n")
        write_text(data / f"shunt{n}_resistor", f"{chip.shunt_uohm}\n")
        write_text(data / f"curr{n}_max", f"{warn}\n")
        write_text(data / f"curr{n}_crit", f"{crit}\n")
        write_text(data / f"curr{n}_max_alarm", "0\n")
        write_text(data / f"curr{n}_crit_alarm", "0\n")
        for stem in (f"in{n}_input", f"curr{n}_input", f"in{n + 3}_input"):
            write_live(data / stem, 0)


class RailWriter:
    """Writes live rail values in place through file descriptors opened once."""

    def __init__(self, root: Path, model: BoardModel) -> None:
        self.files = rail_files(model)
        self._fds: list[tuple[str, int, int, int, int, int, int]] = []
        self._sum_fds: dict[str, int] = {}
        self._sum_index: list[int] = []
        for rf in self.files:
            fd_v = os.open(root / rf.voltage, os.O_WRONLY)
            fd_i = os.open(root / rf.current, os.O_WRONLY)
            fd_p = os.open(root / rf.power, os.O_WRONLY) if rf.power else -1
            fd_s = os.open(root / rf.shunt, os.O_WRONLY) if rf.shunt else -1
            if rf.sum_file is not None and rf.sum_file not in self._sum_fds:
                self._sum_fds[rf.sum_file] = os.open(root / rf.sum_file, os.O_WRONLY)
            sums = list(self._sum_fds)
            self._sum_index.append(sums.index(rf.sum_file) if rf.sum_file else -1)
            self._fds.append((rf.kind, rf.voltage_mv, fd_v, fd_i, fd_p, fd_s, rf.shunt_uohm))
        self._sum_list = list(self._sum_fds.values())

    def write(self, power_w: Sequence[float]) -> list[float]:
        """Write one value per rail (``model.rail_names`` order); returns the powers (W) a
        reader computes from the written files."""
        shown: list[float] = []
        sums = [0] * len(self._sum_list)
        pwrite = os.pwrite
        for (kind, v0, fd_v, fd_i, fd_p, fd_s, r_uohm), p, si in zip(
            self._fds, power_w, self._sum_index, strict=True
        ):
            v, i, pf, w = quantise(kind, v0, p)
            pwrite(fd_v, live_bytes(v), 0)
            pwrite(fd_i, live_bytes(i), 0)
            if fd_p >= 0:
                pwrite(fd_p, live_bytes(pf), 0)
            if fd_s >= 0:
                shunt_uv = i * r_uohm // 1000
                pwrite(fd_s, live_bytes(shunt_uv), 0)
                if si >= 0:
                    sums[si] += shunt_uv
            shown.append(w)
        for fd, total in zip(self._sum_list, sums, strict=True):
            pwrite(fd, live_bytes(total), 0)
        return shown

    def close(self) -> None:
        for _, _, fd_v, fd_i, fd_p, fd_s, _ in self._fds:
            for fd in (fd_v, fd_i, fd_p, fd_s):
                if fd >= 0:
                    os.close(fd)
        for fd in self._sum_list:
            os.close(fd)
        self._fds = []
        self._sum_list = []
