"""Operating points: what is pinned (power mode, CPU/GPU/EMC clocks, cores, governor),
validated against the board before any write, applied in a safe order, read back.

An :class:`OperatingPoint` field left at None is not pinned: applying the point puts that
knob back to the session's snapshot (or, when the point selects a power mode, to what the
mode sets). :data:`DVFS` pins nothing at all: the board's default governors decide.

Applying is one loop over :func:`point_knobs` (each a
:class:`~pytest_edgeenergy.control.plan.Knob`); the session side comes in through the
:class:`~pytest_edgeenergy.control.journal.Journal` protocol, so this module never imports
:mod:`.state`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import NotOffered, ValueSpecError
from .journal import DirectJournal, Journal
from .knobs import CoresKnob, CpufreqKnob, EmcKnob, GpuKnob
from .knobset import KnobSet
from .nvpmodel import NvpmodelKnob
from .plan import Knob, PlanContext
from .point import DIMENSIONS, DVFS, CurrentMode, OperatingPoint, PointSpec
from .steps import Mismatch, Step, read_value
from .values import (
    FreqSpec,
    format_mhz,
    parse_cores,
    parse_freq_list,
    resolve_cores,
    resolve_freqs,
    resolve_governors,
    resolve_power_mode,
    split_list,
)

__all__ = [
    "DIMENSIONS",
    "DVFS",
    "ApplyResult",
    "OperatingPoint",
    "PointSpec",
    "ReadBackMismatch",
    "Resolver",
    "apply",
    "check_drift",
    "files_for",
    "point_knobs",
    "read_back",
    "resolve",
    "thermal_trips",
]

DEFAULT_SOURCES: dict[str, str] = {
    "power_mode": "--power-mode",
    "cpu_freq": "--cpu-freq",
    "gpu_freq": "--gpu-freq",
    "emc_freq": "--emc-freq",
    "cpu_cores": "--cpu-cores",
    "governor": "--governor",
}


_UNSET: Any = object()


class Resolver:
    """Validates option values against one board's knobs (all checks, no writes)."""

    def __init__(
        self,
        knobs: KnobSet,
        *,
        force: bool = False,
        sources: Mapping[str, str] | None = None,
        current_mode: CurrentMode | None = _UNSET,
    ) -> None:
        self.knobs = knobs
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
        stuck = [c.cpu for c in self.knobs.cores if c.cpu not in kept and c.online_file is None]
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
    knobs: KnobSet,
    *,
    force: bool = False,
    sources: Mapping[str, str] | None = None,
) -> OperatingPoint:
    """Validate every value of one point against the board; nothing is written.

    Raises a :class:`ValueSpecError` (unknown mode, frequency not offered, bad cores,
    missing governor, reboot-needing mode) or ``NvpmodelConfError`` for a broken conf.
    """
    items, spec_sources = _spec_items(spec)
    resolver = Resolver(knobs, force=force, sources={**spec_sources, **(sources or {})})
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


def point_knobs(knobs: KnobSet) -> list[Knob[Any]]:
    """Every knob a point pins, in the order applying writes them: the power mode first
    (nvpmodel resets clocks), then cores (online before offline), CPU min/max (in the order
    that never makes min > max) and governors, GPU, EMC."""
    return [
        NvpmodelKnob(knobs),
        CoresKnob(knobs),
        CpufreqKnob(knobs),
        GpuKnob(knobs),
        EmcKnob(knobs),
    ]


def _checked(knobs: Sequence[Knob[Any]]) -> list[Knob[Any]]:
    # The power mode is read back (and drift-checked) after the files, as it always was.
    return sorted(knobs, key=lambda k: isinstance(k, NvpmodelKnob))


def apply(
    point: OperatingPoint,
    knobs: KnobSet,
    state: Journal | None = None,
    *,
    force: bool | None = None,
    settle_s: float | None = None,
    raise_on_mismatch: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> ApplyResult:
    """Apply ``point`` knob by knob (:func:`point_knobs`: nvpmodel first, then cores, CPU,
    GPU, EMC); settle; read back and verify.

    With a journal as ``state`` (a :class:`~pytest_edgeenergy.control.state.Session`)
    every write is journaled first and unpinned knobs go back to the session's snapshot;
    without one the writes are direct and unpinned knobs are left as they are.
    """
    journal: Journal = state if state is not None else DirectJournal(knobs)
    runner = journal.runner
    dry_run = journal.dry_run
    use_force = force if force is not None else journal.force
    baseline = journal.baseline()
    operations = point_knobs(knobs)
    # Unpinned knobs keep what the selected mode set; everything else returns to baseline.
    mode_files = NvpmodelKnob(knobs).files_for(point)
    ctx = PlanContext(
        baseline=_without(baseline, mode_files) if mode_files else baseline,
        baseline_mode=journal.baseline_mode,
        force=use_force,
        restore_forced=journal.restore_forced,
        live_online=not dry_run,
    )
    steps: list[Step] = []
    for knob in operations:
        planned = knob.plan_point(point, ctx)
        knob.apply(planned, runner)
        knob.expect_point(point, ctx)
        steps += planned

    settle = settle_s if settle_s is not None else journal.settle_s
    if settle > 0 and steps and not dry_run:
        sleep(settle)
    mismatches: list[Mismatch] = []
    if not dry_run:
        for knob in _checked(operations):
            mismatches += knob.verify()
    result = ApplyResult(point, tuple(steps), tuple(mismatches), settle, dry_run)
    if raise_on_mismatch and mismatches:
        raise ReadBackMismatch(result.describe(knobs.root))
    return result


def files_for(point: OperatingPoint, knobs: KnobSet) -> list[Path]:
    """Knob files applying ``point`` (and restoring afterwards) may write."""
    paths = [p for knob in point_knobs(knobs) for p in knob.files_for(point)]
    return list(dict.fromkeys(paths))


def read_back(knobs: KnobSet) -> dict[str, Any]:
    """Every knob as it reads now (for the report's ``operating_point.read_back``)."""
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


THROTTLING_TRIP_TYPES = frozenset({"passive", "hot", "critical"})
"""Trip types whose crossing throttles clocks (``active`` only starts a fan)."""


def thermal_trips(knobs: KnobSet) -> list[str]:
    """Thermal zones whose temperature is at or over a throttling trip point."""
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


def check_drift(point: OperatingPoint, knobs: KnobSet) -> list[str]:
    """What no longer matches ``point`` (a knob changed behind our back, the power mode
    moved) and thermal zones over a throttling trip point; empty when all is well."""
    ctx = PlanContext(running=True)
    messages = [m for knob in _checked(point_knobs(knobs)) for m in knob.drift(point, ctx)]
    messages += thermal_trips(knobs)
    return messages
