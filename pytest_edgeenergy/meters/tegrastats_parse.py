"""Parser for one line of ``tegrastats`` output, every generation from L4T 32 to JetPack 7.

Power fields come in three shapes: ``NAME cur/avg`` (unitless mW: Nano, TX2, Xavier on
L4T 32), ``NAME curmW/avgmW`` (Orin, JetPack 5/6) and ``NAME amW/bmW/cmW`` (JetPack 7,
third value undocumented). The second number is tegrastats' running average since it
started, not a windowed mean, so nothing here integrates it. ``NC`` rails (not connected)
are kept in :attr:`TegrastatsSample.rails` but left out of ``rails_w``.

Unknown tokens are skipped: :func:`parse_line` never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ..board.types import TotalMethod

TOTAL_RAIL_PRIORITY: tuple[str, ...] = ("VIN", "POM_5V_IN", "VDD_IN")
"""Rails measuring the whole input, best first (Thor INA238, Nano, TX2/NX/Orin NX/Nano)."""

NOT_CONNECTED = "NC"
OFFLINE_TEMP_C = -256.0

_NUM = r"\d+(?:\.\d+)?"
_UNIT = r"(?:\s?(mW|W))?"
_TIMESTAMP_RE = re.compile(r"^\s*(\d{2})-(\d{2})-(\d{4}) (\d{2}):(\d{2}):(\d{2})(?=\s|$)")
_RAIL_RE = re.compile(
    rf"(?<!\S)([A-Za-z_][\w-]*) ({_NUM}){_UNIT}/({_NUM}){_UNIT}(?:/({_NUM}){_UNIT})?(?=\s|$)"
)
_TEMP_RE = re.compile(rf"(?<!\S)([A-Za-z_][\w-]*)@(-?{_NUM})C(?:/(-?{_NUM})C)?(?=\s|$)")
_CPU_RE = re.compile(r"(?<!\S)CPU \[([^\]]*)\]")
_CPU_CORE_RE = re.compile(rf"^({_NUM})%(?:@(\d+))?$")
_LOAD_RE = re.compile(
    rf"(?<!\S)([A-Z][A-Z0-9_]*_FREQ) (?:({_NUM})%)?(?:@(?:\[([\d,\s]*)\]|(\d+)))?(?=\s|$)"
)
_ENGINE_RE = re.compile(r"(?<!\S)([A-Z][A-Z0-9_]*) (off|\d+)(?=\s|$)")
_MEM_RE = re.compile(r"(?<!\S)(RAM|SWAP) (\d+)/(\d+)MB(?=\s|$)")


@dataclass(frozen=True)
class RailReading:
    """One power field as printed: current value, running average, optional third value."""

    name: str
    cur_w: float
    avg_w: float
    """tegrastats' running average since it started (not a window mean; never integrated)."""
    third_mw: float | None = None
    """JetPack 7 prints a third value whose meaning is undocumented; kept raw, in mW."""
    unit: str = "mW"
    """Unit as printed: ``"mW"``, ``"W"`` or ``""`` (unitless, meaning mW)."""

    @property
    def connected(self) -> bool:
        """False for ``NC`` (not connected) channels, which callers skip."""
        return self.name != NOT_CONNECTED


@dataclass(frozen=True)
class CpuCore:
    """One entry of ``CPU [...]``: ``off``, ``5%@729`` or ``5%``."""

    online: bool
    load_pct: float | None = None
    freq_mhz: int | None = None


@dataclass(frozen=True)
class LoadFreq:
    """A ``*_FREQ`` field: ``62%@612``, ``0%@[305]``, ``12%@[1300,1300]``, ``@[..]``, ``0%``."""

    load_pct: float | None
    freq_mhz: tuple[int, ...] = ()


@dataclass(frozen=True)
class TegrastatsSample:
    """Everything recognised on one tegrastats line. Power in W, temperatures in °C."""

    timestamp: datetime | None
    rails: tuple[RailReading, ...]
    """Every power field in line order, ``NC`` included."""
    rails_w: dict[str, float]
    """Current power of each connected rail (first occurrence of a name wins)."""
    rails_avg_w: dict[str, float]
    """tegrastats' running average of each connected rail (informative only)."""
    temps_c: dict[str, float | None]
    """Temperatures by sensor; None where tegrastats prints ``-256C`` (sensor offline)."""
    cpu: tuple[CpuCore, ...] = ()
    loads: dict[str, LoadFreq] = field(default_factory=dict)
    """``*_FREQ`` fields by name (``EMC_FREQ``, ``GR3D_FREQ``, ``GR3D2_FREQ`` ...)."""
    engines_mhz: dict[str, int | None] = field(default_factory=dict)
    """``NAME off|MHz`` fields (``APE 174``, ``NVENC off``, ``VIC_FREQ 115``); None = off."""
    ram_mb: tuple[int, int] | None = None
    """``(used, total)`` MB."""
    swap_mb: tuple[int, int] | None = None

    @property
    def has_power(self) -> bool:
        return bool(self.rails_w)

    @property
    def gr3d(self) -> LoadFreq | None:
        return self.loads.get("GR3D_FREQ")

    @property
    def emc(self) -> LoadFreq | None:
        return self.loads.get("EMC_FREQ")

    @property
    def total_rail(self) -> str | None:
        return total_rail_of(self.rails_w)

    @property
    def total_method(self) -> TotalMethod:
        return "rail" if self.total_rail is not None else "sum"

    @property
    def total_w(self) -> float:
        """Total input power by the board rule: VIN > POM_5V_IN > VDD_IN, else the sum."""
        return total_power_w(self.rails_w)


def total_rail_of(names: Iterable[str]) -> str | None:
    """The rail that measures the whole input, or None when the total is the sum of rails."""
    present = set(names)
    for name in TOTAL_RAIL_PRIORITY:
        if name in present:
            return name
    return None


def total_power_w(rails_w: dict[str, float]) -> float:
    """Total power from connected rails: the total rail if any, else their sum."""
    rail = total_rail_of(rails_w)
    if rail is not None:
        return rails_w[rail]
    return sum(rails_w.values())


def _to_w(text: str, unit: str | None) -> float:
    value = float(text)
    return value if unit == "W" else value / 1000.0


def _parse_timestamp(line: str) -> datetime | None:
    m = _TIMESTAMP_RE.match(line)
    if m is None:
        return None
    month, day, year, hour, minute, second = (int(g) for g in m.groups())
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


def _parse_rail(m: re.Match[str]) -> RailReading:
    name, cur, cur_unit, avg, avg_unit, third, third_unit = m.groups()
    unit = cur_unit or avg_unit or ""
    third_mw: float | None = None
    if third is not None:
        third_mw = float(third) * (1e3 if third_unit == "W" else 1.0)
    return RailReading(
        name=name,
        cur_w=_to_w(cur, cur_unit or unit),
        avg_w=_to_w(avg, avg_unit or unit),
        third_mw=third_mw,
        unit=unit,
    )


def _parse_cpu(body: str) -> tuple[CpuCore, ...]:
    cores: list[CpuCore] = []
    for entry in body.split(","):
        entry = entry.strip()
        if not entry:
            continue
        if entry == "off":
            cores.append(CpuCore(online=False))
            continue
        m = _CPU_CORE_RE.match(entry)
        if m is None:
            cores.append(CpuCore(online=True))
        else:
            freq = m.group(2)
            cores.append(
                CpuCore(
                    online=True, load_pct=float(m.group(1)), freq_mhz=int(freq) if freq else None
                )
            )
    return tuple(cores)


def _parse_load(m: re.Match[str]) -> LoadFreq | None:
    _, pct, array, single = m.groups()
    if pct is None and array is None and single is None:
        return None
    if array is not None:
        freqs = tuple(int(f) for f in array.replace(" ", "").split(",") if f)
    elif single is not None:
        freqs = (int(single),)
    else:
        freqs = ()
    return LoadFreq(load_pct=float(pct) if pct is not None else None, freq_mhz=freqs)


def parse_line(line: str) -> TegrastatsSample:
    """Parse one tegrastats line; fields not recognised are ignored (never raises).

    A line without power fields gives a sample with empty ``rails``.
    """
    text = line.strip()
    rails = tuple(_parse_rail(m) for m in _RAIL_RE.finditer(text))
    rails_w: dict[str, float] = {}
    rails_avg_w: dict[str, float] = {}
    for r in rails:
        if r.connected and r.name not in rails_w:
            rails_w[r.name] = r.cur_w
            rails_avg_w[r.name] = r.avg_w

    temps: dict[str, float | None] = {}
    for m in _TEMP_RE.finditer(text):
        temp_c = float(m.group(2))
        temps.setdefault(m.group(1), None if temp_c == OFFLINE_TEMP_C else temp_c)

    cpu_m = _CPU_RE.search(text)
    cpu = _parse_cpu(cpu_m.group(1)) if cpu_m else ()

    loads: dict[str, LoadFreq] = {}
    for m in _LOAD_RE.finditer(text):
        load = _parse_load(m)
        if load is not None:
            loads.setdefault(m.group(1), load)

    engines: dict[str, int | None] = {}
    for m in _ENGINE_RE.finditer(text):
        mhz = m.group(2)
        engines.setdefault(m.group(1), None if mhz == "off" else int(mhz))

    mem: dict[str, tuple[int, int]] = {}
    for m in _MEM_RE.finditer(text):
        mem.setdefault(m.group(1), (int(m.group(2)), int(m.group(3))))

    return TegrastatsSample(
        timestamp=_parse_timestamp(text),
        rails=rails,
        rails_w=rails_w,
        rails_avg_w=rails_avg_w,
        temps_c=temps,
        cpu=cpu,
        loads=loads,
        engines_mhz=engines,
        ram_mb=mem.get("RAM"),
        swap_mb=mem.get("SWAP"),
    )
