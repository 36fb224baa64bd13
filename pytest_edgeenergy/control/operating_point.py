"""Operating points: what is pinned (power mode, CPU/GPU/EMC clocks, cores, governor),
validated against the board before any write, applied in a safe order, read back.

An :class:`OperatingPoint` field left at None is not pinned: applying the point puts that
knob back to the session's snapshot (or, when the point selects a power mode, to what the
mode sets). :data:`DVFS` pins nothing at all: the board's default governors decide.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..board.detect import Board
from .errors import NotOffered, ValueSpecError
from .knobs import CoresKnob, CpufreqKnob, CpuTarget, EmcKnob, GpuKnob, GpuTarget
from .knobset import KnobSet, knob_set
from .nvpmodel import CurrentMode, NvpmodelKnob
from .steps import DirectRunner, Mismatch, Step, StepRunner, read_value
from .values import (
    FreqSpec,
    format_freq,
    format_mhz,
    parse_cores,
    parse_freq_list,
    resolve_cores,
    resolve_freqs,
    resolve_governors,
    resolve_power_mode,
    split_list,
)

if TYPE_CHECKING:
    from .state import Session

DIMENSIONS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
"""Keys of a point spec / grid options, in the order they appear in ids."""

DEFAULT_SOURCES: dict[str, str] = {
    "power_mode": "--power-mode",
    "cpu_freq": "--cpu-freq",
    "gpu_freq": "--gpu-freq",
    "emc_freq": "--emc-freq",
    "cpu_cores": "--cpu-cores",
    "governor": "--governor",
}


@dataclass(frozen=True)
class OperatingPoint:
    """One operating point; every field optional (None = not pinned)."""

    power_mode: str | None = None
    """nvpmodel mode name as the board's conf spells it."""
    cpu_freq_hz: int | None = None
    gpu_freq_hz: int | None = None
    emc_freq_hz: int | None = None
    cpu_cores: int | None = None
    """Number of online cores (cpu0 .. cpuN-1)."""
    governor: str | None = None
    """CPU scaling governor."""
    words: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """``(field, word)`` for fields asked for by a word (``gpu_freq_hz`` by ``min``), so
    reports can join the same request across boards; not part of the point's identity."""

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


_UNSET: Any = object()


class Resolver:
    """Validates option values against one board (all checks, no writes)."""

    def __init__(
        self,
        board: Board | KnobSet | Path,
        *,
        force: bool = False,
        sources: Mapping[str, str] | None = None,
        current_mode: CurrentMode | None = _UNSET,
    ) -> None:
        self.knobs = knob_set(board)
        self.force = force
        self.sources = {**DEFAULT_SOURCES, **(sources or {})}
        self._current = current_mode

    def source(self, key: str) -> str:
        return self.sources.get(key, key)

    def current_mode(self) -> CurrentMode | None:
        if self._current is _UNSET:
            nv = NvpmodelKnob(self.knobs)
            self._current = nv.current() if self.knobs.nvpmodel_bin is not None else None
        result: CurrentMode | None = self._current
        return result

    def dimension(self, key: str, text: str) -> tuple[Any, ...]:
        """Every value ``text`` (a comma list) means for ``key``; None = not pinned."""
        handlers: dict[str, Callable[[str], tuple[Any, ...]]] = {
            "power_mode": self.power_modes,
            "cpu_freq": self.cpu_freqs,
            "gpu_freq": self.gpu_freqs,
            "emc_freq": self.emc_freqs,
            "cpu_cores": self.cores,
            "governor": self.governors,
        }
        if key not in handlers:
            raise ValueSpecError(
                f"unknown operating-point key {key!r}; allowed: {', '.join(DIMENSIONS)}"
            )
        return handlers[key](text)

    def power_modes(self, text: str) -> tuple[str | None, ...]:
        source = self.source("power_mode")
        result: list[str | None] = []
        for item in split_list(text, source=source):
            if item.lower() == "dvfs":
                value: str | None = None
            else:
                mode = resolve_power_mode(item, self.knobs.require_conf(), source=source)
                if self.knobs.nvpmodel_bin is None:
                    raise ValueSpecError(
                        f"{source} {item}: no nvpmodel tool under {self.knobs.root} "
                        f"(usr/bin/nvpmodel) to select power modes with"
                    )
                NvpmodelKnob(self.knobs).check_switch(
                    mode, current=self.current_mode(), force=self.force, source=source
                )
                value = mode.name
            if value not in result:
                result.append(value)
        return tuple(result)

    def cpu_offered(self) -> tuple[int, ...]:
        """CPU frequencies every policy offers (Hz)."""
        tables = [set(p.available_freqs_hz) for p in self.knobs.policies]
        return tuple(sorted(set.intersection(*tables))) if tables else ()

    def cpu_freqs(self, text: str) -> tuple[int | None, ...]:
        source = self.source("cpu_freq")
        return resolve_freqs(
            parse_freq_list(text, source=source), self.cpu_offered(), source=source, clock="CPU"
        )

    def gpu_freqs(self, text: str) -> tuple[int | None, ...]:
        source = self.source("gpu_freq")
        gpu = self.knobs.gpu
        specs = parse_freq_list(text, source=source)
        if gpu is None and any(s.word != "dvfs" for s in specs):
            raise NotOffered(f"{source} {text}: no GPU devfreq device found on this board")
        offered = gpu.available_freqs_hz if gpu is not None else ()
        return resolve_freqs(specs, offered, source=source, clock="GPU")

    def emc_freqs(self, text: str) -> tuple[int | None, ...]:
        source = self.source("emc_freq")
        specs = parse_freq_list(text, source=source)
        return tuple(dict.fromkeys(self._emc(spec, source) for spec in specs))

    def _emc(self, spec: FreqSpec, source: str) -> int | None:
        if spec.word == "dvfs":
            return None
        emc = self.knobs.emc
        if emc is None:
            raise NotOffered(
                f"{source} {spec.text}: no EMC clock override found (bpmp debugfs "
                f"clk/emc or override.emc); allowed: dvfs"
            )
        lo, hi = emc.min_rate_hz, emc.highest_hz
        if lo is None or hi is None:
            raise NotOffered(f"{source} {spec.text}: the EMC shows no min/max rate to pin within")
        span = f"{format_mhz(lo).removesuffix(' MHz')} .. {format_mhz(hi)}"
        if emc.cap_hz and hi == emc.cap_hz:
            span += " (capped by the power mode)"
        if spec.word == "min":
            return lo
        if spec.word == "max":
            return hi
        if spec.word == "all":
            raise NotOffered(
                f"{source} all: the EMC exposes no table of rates, only the range {span}; "
                f"name the rates"
            )
        assert spec.hz is not None
        if not lo <= spec.hz <= hi:
            raise NotOffered(f"{source} {spec.text}: not offered; offered: {span}")
        return spec.hz

    def cores(self, text: str) -> tuple[int | None, ...]:
        source = self.source("cpu_cores")
        items = split_list(text, source=source)
        result: list[int | None] = []
        present = sorted(c.cpu for c in self.knobs.cores) or list(self.knobs.present)
        for item in items:
            if item.lower() == "dvfs":
                values: tuple[int | None, ...] = (None,)
            else:
                values = resolve_cores(parse_cores(item, source=source), present, source=source)
            for value in values:
                if value is not None:
                    self._check_hotplug(value, source)
                if value not in result:
                    result.append(value)
        return tuple(result)

    def _check_hotplug(self, count: int, source: str) -> None:
        kept = set(CoresKnob(self.knobs).online_for(count))
        stuck = [c.cpu for c in self.knobs.cores if c.cpu not in kept and c.online_path is None]
        if stuck:
            raise ValueSpecError(
                f"{source} {count}: cpu{stuck[0]} cannot be taken offline on this board "
                f"(no cpu{stuck[0]}/online file)"
            )

    def governors(self, text: str) -> tuple[str | None, ...]:
        source = self.source("governor")
        lists = [set(p.available_governors) for p in self.knobs.policies]
        common = sorted(set.intersection(*lists)) if lists else []
        return resolve_governors(text, common, source=source)


def _spec_items(
    spec: PointSpec | Mapping[str, str | None],
) -> tuple[list[tuple[str, str]], Mapping[str, str]]:
    if isinstance(spec, PointSpec):
        return spec.items(), spec.sources
    return [(k, v) for k, v in spec.items() if v is not None], {}


def resolve(
    spec: PointSpec | Mapping[str, str | None],
    board: Board | KnobSet | Path,
    *,
    force: bool = False,
    sources: Mapping[str, str] | None = None,
) -> OperatingPoint:
    """Validate every value of one point against the board; nothing is written.

    Raises a :class:`ValueSpecError` (unknown mode, frequency not offered, bad cores,
    missing governor, reboot-needing mode) or ``NvpmodelConfError`` for a broken conf.
    """
    items, spec_sources = _spec_items(spec)
    resolver = Resolver(board, force=force, sources={**spec_sources, **(sources or {})})
    values: dict[str, Any] = {}
    for key, text in items:
        resolved = resolver.dimension(key, text)
        if len(resolved) != 1:
            raise ValueSpecError(
                f"{resolver.source(key)} {text}: one operating point takes one value, this "
                f"names {len(resolved)}; use grid.expand for lists"
            )
        values[key] = resolved[0]
    return OperatingPoint(
        power_mode=values.get("power_mode"),
        cpu_freq_hz=values.get("cpu_freq"),
        gpu_freq_hz=values.get("gpu_freq"),
        emc_freq_hz=values.get("emc_freq"),
        cpu_cores=values.get("cpu_cores"),
        governor=values.get("governor"),
    )


# ---------------------------------------------------------------- apply


@dataclass(frozen=True)
class ApplyResult:
    """What applying a point did and what the read-back found."""

    point: OperatingPoint
    steps: tuple[Step, ...]
    mismatches: tuple[Mismatch, ...]
    settle_s: float
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def describe(self, root: Path | None = None) -> str:
        if self.ok:
            return f"{self.point.id}: applied ({len(self.steps)} change(s)), read-back ok"
        return f"{self.point.id}: read-back differs: " + "; ".join(
            m.describe(root) for m in self.mismatches
        )


class ReadBackMismatch(ValueSpecError):
    """Raised by :func:`apply` with ``raise_on_mismatch=True``."""


def _without(baseline: Mapping[Path, str] | None, paths: Iterable[Path]) -> dict[Path, str] | None:
    if baseline is None:
        return None
    dropped = {os.path.realpath(p) for p in paths}
    return {p: v for p, v in baseline.items() if os.path.realpath(p) not in dropped}


def apply(
    point: OperatingPoint,
    board: Board | KnobSet | Path,
    state: Session | None = None,
    *,
    force: bool | None = None,
    settle_s: float | None = None,
    raise_on_mismatch: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> ApplyResult:
    """Apply ``point``: nvpmodel first (it resets clocks), then cores, CPU min/max (in the
    order that never makes min > max), governors, GPU, EMC; settle; read back and verify.

    With a :class:`~pytest_edgeenergy.control.state.Session` as ``state`` every write is
    journaled first and unpinned knobs go back to the session's snapshot; without one the
    writes are direct and unpinned knobs are left as they are.
    """
    knobs = knob_set(board)
    runner: StepRunner = state.runner if state is not None else DirectRunner(knobs.check_writable)
    dry_run = bool(state is not None and state.dry_run)
    use_force = force if force is not None else bool(state is not None and state.force)
    baseline = state.baseline() if state is not None else None
    steps: list[Step] = []

    nv = NvpmodelKnob(knobs)
    if point.power_mode is not None:
        calls = nv.plan(point.power_mode, force=use_force)
    elif state is not None and state.baseline_mode is not None and knobs.nvpmodel_bin is not None:
        wanted = state.baseline_mode
        now = nv.current()
        calls = []
        if now is not None and now.id != wanted.id:
            snapshot = state.snapshot
            forced = use_force or bool(snapshot is not None and snapshot.forced)
            calls = nv.plan(wanted.id, force=forced, current=now)
    else:
        calls = []
    nv.apply(calls, runner)
    steps += calls
    # Unpinned knobs keep what the selected mode set; everything else returns to baseline.
    base = _without(baseline, nv.files()) if point.power_mode is not None else baseline

    cores = CoresKnob(knobs)
    writes = cores.plan(point.cpu_cores, base)
    cores.apply(writes, runner)
    steps += writes
    if point.cpu_cores is not None:
        for core in knobs.cores:
            if core.online_path is not None:
                keep = core.cpu in cores.online_for(point.cpu_cores)
                cores.expect(core.online_path, "1" if keep else "0")
        online: tuple[int, ...] | None = cores.online_for(point.cpu_cores)
    else:
        online = None if dry_run else tuple(cores.show()["online"])

    cpu = CpufreqKnob(knobs)
    cpu_target = CpuTarget(point.cpu_freq_hz, point.governor, online)
    writes = cpu.plan(cpu_target, base)
    cpu.apply(writes, runner)
    steps += writes
    for path, value in cpu.pinned_paths(cpu_target).items():
        cpu.expect(path, value)

    gpu = GpuKnob(knobs)
    gpu_target = GpuTarget(point.gpu_freq_hz)
    writes = gpu.plan(gpu_target, base)
    gpu.apply(writes, runner)
    steps += writes
    for path, value in gpu.pinned_paths(gpu_target).items():
        gpu.expect(path, value)

    emc = EmcKnob(knobs)
    writes = emc.plan(point.emc_freq_hz, base)
    emc.apply(writes, runner)
    steps += writes
    for path, value in emc.pinned_paths(point.emc_freq_hz).items():
        emc.expect(path, value)

    settle = (
        settle_s
        if settle_s is not None
        else (state.settle_s if state is not None else (0.5 if knobs.real else 0.0))
    )
    if settle > 0 and steps and not dry_run:
        sleep(settle)
    mismatches: list[Mismatch] = []
    if not dry_run:
        for knob in (cores, cpu, gpu, emc):
            mismatches += knob.verify()
        if calls:
            mismatches += nv.verify()
    result = ApplyResult(point, tuple(steps), tuple(mismatches), settle, dry_run)
    if raise_on_mismatch and mismatches:
        raise ReadBackMismatch(result.describe(knobs.root))
    return result


def files_for(point: OperatingPoint, board: Board | KnobSet | Path) -> list[Path]:
    """Knob files applying ``point`` (and restoring afterwards) may write."""
    knobs = knob_set(board)
    paths: list[Path] = []
    if point.power_mode is not None:
        paths += NvpmodelKnob(knobs).files()
    if point.cpu_cores is not None:
        paths += CoresKnob(knobs).files()
    if point.cpu_freq_hz is not None or point.governor is not None:
        paths += CpufreqKnob(knobs).files()
    if point.gpu_freq_hz is not None:
        paths += GpuKnob(knobs).files()
    if point.emc_freq_hz is not None:
        paths += EmcKnob(knobs).files()
    return list(dict.fromkeys(paths))


def read_back(board: Board | KnobSet | Path) -> dict[str, Any]:
    """Every knob as it reads now (for the report's ``operating_point.read_back``)."""
    knobs = knob_set(board)
    nv = NvpmodelKnob(knobs)
    mode = nv.current() if nv.available() else None
    return {
        "power_mode": mode.to_json() if mode is not None else None,
        "cores": CoresKnob(knobs).show(),
        "cpufreq": CpufreqKnob(knobs).show(),
        "gpu": GpuKnob(knobs).show() or None,
        "emc": EmcKnob(knobs).show() or None,
    }


# ---------------------------------------------------------------- drift and throttling


def _pinned_expectations(point: OperatingPoint, knobs: KnobSet) -> dict[Path, str]:
    expected: dict[Path, str] = {}
    cores = CoresKnob(knobs)
    online: tuple[int, ...] | None = None
    if point.cpu_cores is not None:
        online = cores.online_for(point.cpu_cores)
        for core in knobs.cores:
            if core.online_path is not None:
                expected[core.online_path] = "1" if core.cpu in online else "0"
    expected.update(
        CpufreqKnob(knobs).pinned_paths(CpuTarget(point.cpu_freq_hz, point.governor, online))
    )
    expected.update(GpuKnob(knobs).pinned_paths(GpuTarget(point.gpu_freq_hz)))
    expected.update(EmcKnob(knobs).pinned_paths(point.emc_freq_hz, running=True))
    return expected


THROTTLING_TRIP_TYPES = frozenset({"passive", "hot", "critical"})
"""Trip types whose crossing throttles clocks (``active`` only starts a fan)."""


def thermal_trips(board: Board | KnobSet | Path) -> list[str]:
    """Thermal zones whose temperature is at or over a throttling trip point."""
    knobs = knob_set(board)
    messages: list[str] = []
    for zone in knobs.thermal_dirs:
        temp = _read_int(zone / "temp")
        if temp is None or temp <= -256000:
            continue
        kind = read_value(zone / "type") or zone.name
        try:
            trip_files = sorted(zone.glob("trip_point_*_temp"))
        except OSError:
            continue
        for trip_file in trip_files:
            trip = _read_int(trip_file)
            if trip is None or trip <= 0:
                continue
            trip_type = read_value(trip_file.with_name(trip_file.name.replace("_temp", "_type")))
            if trip_type is not None and trip_type not in THROTTLING_TRIP_TYPES:
                continue
            if temp >= trip:
                number = trip_file.name.removeprefix("trip_point_").removesuffix("_temp")
                messages.append(
                    f"thermal: {zone.name} ({kind}) at {temp / 1000:.1f} C is over trip point "
                    f"{number} ({trip_type or 'type unknown'}) {trip / 1000:.1f} C: clocks may "
                    f"be throttled"
                )
                break
    return messages


def _read_int(path: Path) -> int | None:
    text = read_value(path)
    try:
        return int(text) if text else None
    except ValueError:
        return None


def check_drift(point: OperatingPoint, board: Board | KnobSet | Path) -> list[str]:
    """What no longer matches ``point`` (a knob changed behind our back, the power mode
    moved) and thermal zones over a throttling trip point; empty when all is well."""
    knobs = knob_set(board)
    messages: list[str] = []
    for path, value in _pinned_expectations(point, knobs).items():
        actual = read_value(path)
        if actual != value:
            messages.append(
                f"drift: /{knobs.rel(path)} pinned {value}, now "
                f"{actual if actual is not None else '(unreadable)'}"
            )
    if point.power_mode is not None:
        current = NvpmodelKnob(knobs).current()
        if current is None or (current.name or "").lower() != point.power_mode.lower():
            now = "unknown" if current is None else f"{current.id} {current.name}"
            messages.append(f"drift: power mode pinned {point.power_mode}, now {now}")
    messages += thermal_trips(knobs)
    return messages
