"""Ground-truth energy of a virtual board, stored in the tree.

The animator integrates exactly the power values it WROTE (the quantised values a reader
can see: hwmon ``in*_input`` [mV] * ``curr*_input`` [mA], iio ``in_power*_input`` [mW],
INA238 ``power1_input`` [µW]), piecewise constant between writes, stamped with
``time.monotonic()`` (CLOCK_MONOTONIC is system-wide, so another process can compare).

``var/lib/edgeenergy-sim/truth.json`` names the rails once; ``truth.bin`` holds one
fixed-size record rewritten with a single ``os.pwrite``:
magic, sequence number, t_s, then per rail (energy_j, power_w), then the total's
(energy_j, power_w), then a CRC-32 of everything before it. :func:`read_truth` retries a
torn read (bad CRC) until it gets a whole record.
"""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EdgeEnergyError

TRUTH_DIR = "var/lib/edgeenergy-sim"
TRUTH_BIN = f"{TRUTH_DIR}/truth.bin"
TRUTH_JSON = f"{TRUTH_DIR}/truth.json"
MAGIC = b"EETRUTH1"
_HEAD = struct.Struct("<8sQd")


class TruthUnavailable(EdgeEnergyError, OSError):
    """The tree has no readable ground-truth record."""


@dataclass(frozen=True)
class Truth:
    """Energy counters at ``t_s`` and the power in force since then."""

    t_s: float
    seq: int
    energy_j: dict[str, float]
    power_w: dict[str, float]
    total_energy_j: float
    total_power_w: float
    total_rail: str | None
    """The rail that is the board total, or None when the total is the sum of rails."""

    @property
    def total_method(self) -> str:
        return "rail" if self.total_rail is not None else "sum"

    def energy_j_at(self, t_s: float) -> dict[str, float]:
        """Energy per rail at monotonic time ``t_s`` (valid for ``t_s >= self.t_s``)."""
        dt = t_s - self.t_s
        return {k: e + self.power_w[k] * dt for k, e in self.energy_j.items()}

    def total_energy_j_at(self, t_s: float) -> float:
        """Board-total energy at ``t_s``: the total rail's, or the sum of rails."""
        return self.total_energy_j + self.total_power_w * (t_s - self.t_s)


def _record_struct(n: int) -> struct.Struct:
    return struct.Struct(f"<8sQd{2 * n + 2}dI")


def _load_meta(root: Path) -> tuple[tuple[str, ...], str | None]:
    try:
        meta = json.loads((root / TRUTH_JSON).read_text())
    except (OSError, ValueError) as exc:
        raise TruthUnavailable(f"{root / TRUTH_JSON}: no ground-truth metadata ({exc})") from exc
    rails = tuple(str(r) for r in meta["rails"])
    total = meta.get("total_rail")
    return rails, (str(total) if total is not None else None)


def _decode(data: bytes, rails: tuple[str, ...], total_rail: str | None) -> Truth | None:
    rec = _record_struct(len(rails))
    if len(data) < rec.size:
        return None
    values = rec.unpack_from(data)
    if values[0] != MAGIC or zlib.crc32(data[: rec.size - 4]) != values[-1]:
        return None
    floats = values[3:-1]
    energy = {name: floats[2 * i] for i, name in enumerate(rails)}
    power = {name: floats[2 * i + 1] for i, name in enumerate(rails)}
    return Truth(
        t_s=values[2],
        seq=values[1],
        energy_j=energy,
        power_w=power,
        total_energy_j=floats[-2],
        total_power_w=floats[-1],
        total_rail=total_rail,
    )


def read_truth(root: Path, *, attempts: int = 100) -> Truth:
    """The latest ground-truth record of the virtual board under ``root``.

    Retries torn reads; raises :class:`TruthUnavailable` when there is no valid record.
    """
    rails, total_rail = _load_meta(root)
    path = root / TRUTH_BIN
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise TruthUnavailable(f"{path}: no ground-truth record ({exc})") from exc
    try:
        size = _record_struct(len(rails)).size
        for _ in range(max(1, attempts)):
            truth = _decode(os.pread(fd, size, 0), rails, total_rail)
            if truth is not None:
                return truth
            time.sleep(0.0005)
    finally:
        os.close(fd)
    raise TruthUnavailable(f"{path}: no valid ground-truth record after {attempts} reads")


class TruthWriter:
    """Integrates written rail power and stores the running counters in the tree."""

    def __init__(self, root: Path, rails: Sequence[str], total_rail: str | None) -> None:
        self.rails = tuple(rails)
        self.total_rail = total_rail
        self._total_index = self.rails.index(total_rail) if total_rail is not None else -1
        self._rec = _record_struct(len(self.rails))
        (root / TRUTH_DIR).mkdir(parents=True, exist_ok=True)
        meta_path = root / TRUTH_JSON
        meta = {"rails": list(self.rails), "total_rail": total_rail}
        if not meta_path.exists() or json.loads(meta_path.read_text()) != meta:
            meta_path.write_text(json.dumps(meta) + "\n")
        self._fd = os.open(root / TRUTH_BIN, os.O_RDWR | os.O_CREAT, 0o644)
        self.seq = 0
        self.t_s: float | None = None
        self.energy_j = [0.0] * len(self.rails)
        self.power_w = [0.0] * len(self.rails)
        self.total_energy_j = 0.0
        self.total_power_w = 0.0
        previous = _decode(os.pread(self._fd, self._rec.size, 0), self.rails, total_rail)
        if previous is not None and previous.t_s <= time.monotonic():
            # Continue the counters: the files kept showing the last values meanwhile.
            self.seq = previous.seq
            self.t_s = previous.t_s
            self.energy_j = [previous.energy_j[r] for r in self.rails]
            self.power_w = [previous.power_w[r] for r in self.rails]
            self.total_energy_j = previous.total_energy_j
            self.total_power_w = previous.total_power_w

    def update(self, t_s: float, power_w: Sequence[float]) -> None:
        """Record that ``power_w`` (rails order) is shown from monotonic time ``t_s`` on."""
        if self.t_s is not None:
            dt = t_s - self.t_s
            if dt > 0:
                energy = self.energy_j
                for i, p in enumerate(self.power_w):
                    energy[i] += p * dt
                self.total_energy_j += self.total_power_w * dt
        self.t_s = t_s
        self.power_w = list(power_w)
        if self._total_index >= 0:
            self.total_power_w = self.power_w[self._total_index]
        else:
            self.total_power_w = sum(self.power_w)
        self.seq += 1
        floats: list[float] = []
        for e, p in zip(self.energy_j, self.power_w, strict=True):
            floats.append(e)
            floats.append(p)
        floats.append(self.total_energy_j)
        floats.append(self.total_power_w)
        body = _HEAD.pack(MAGIC, self.seq, t_s) + struct.pack(f"<{len(floats)}d", *floats)
        os.pwrite(self._fd, body + struct.pack("<I", zlib.crc32(body)), 0)

    def close(self) -> None:
        os.close(self._fd)
