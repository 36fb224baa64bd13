"""File knobs as operations (the pyperf ``system tune`` model): CPU hotplug, cpufreq,
GPU devfreq and the EMC clock override, each an implementation of
:class:`~pytest_edgeenergy.control.plan.Knob`.

Besides the protocol (``show``, ``files_for``, ``plan_point``, ``apply``, ``expect_point``,
``verify``, ``drift``) each knob has ``available()``, ``files()`` and a ``plan(target,
baseline)`` of its own target type. A target field left at None means "not pinned": the
knob then plans to put the file back to its ``baseline`` value (the session's snapshot)
when one is given, or leaves it alone. Frequencies are Hz in every target; cpufreq files
hold kHz on disk and the conversion happens here. Every file comes from the board's
discovery (:mod:`pytest_edgeenergy.board.knobs`), through the :class:`KnobSet`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..board.knobs import EmcKnobs, GpuDevfreq
from .knobset import KnobSet
from .plan import Baseline, PlanContext
from .point import OperatingPoint
from .steps import DirectRunner, Mismatch, StepRunner, Write, read_value

__all__ = [
    "Baseline",
    "CoresKnob",
    "CpuTarget",
    "CpufreqKnob",
    "EmcKnob",
    "FileKnob",
    "GpuKnob",
    "GpuTarget",
    "min_max_writes",
    "online_cpus",
    "online_for",
]


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def min_max_writes(
    min_path: Path,
    max_path: Path,
    new_min: str | None,
    new_max: str | None,
    knob: str,
) -> list[Write]:
    """Writes for a min/max pair in the order that never makes min > max on the way.

    Raising the floor above the current ceiling writes the ceiling first; otherwise the
    floor goes first. Unchanged values are not written.
    """
    cur_min, cur_max = read_value(min_path), read_value(max_path)
    min_write = (
        Write(min_path, new_min, cur_min, knob)
        if new_min is not None and new_min != cur_min
        else None
    )
    max_write = (
        Write(max_path, new_max, cur_max, knob)
        if new_max is not None and new_max != cur_max
        else None
    )
    ordered: list[Write | None]
    nmin, cmax = _int(new_min), _int(cur_max)
    if min_write is not None and nmin is not None and cmax is not None and nmin > cmax:
        ordered = [max_write, min_write]
    else:
        ordered = [min_write, max_write]
    return [w for w in ordered if w is not None]


def _set(path: Path | None, value: str | None, knob: str) -> list[Write]:
    if path is None or value is None or not path.is_file():
        return []
    current = read_value(path)
    return [] if current == value else [Write(path, value, current, knob)]


def _from_baseline(path: Path, baseline: Baseline | None) -> str | None:
    return None if baseline is None else baseline.get(path)


def online_cpus(knobs: KnobSet) -> tuple[int, ...]:
    """The CPUs online now (one without an ``online`` file cannot go offline: online)."""
    return tuple(
        c.cpu for c in knobs.cores if c.online_file is None or read_value(c.online_file) == "1"
    )


def online_for(knobs: KnobSet, count: int) -> tuple[int, ...]:
    """The CPUs that stay online for ``count`` cores (the lowest numbers)."""
    return tuple(sorted(c.cpu for c in knobs.cores)[:count])


class FileKnob(ABC):
    """Shared ``apply``/``verify``/``drift`` of knobs made of plain files."""

    name = "file"

    def __init__(self, knobs: KnobSet) -> None:
        self.knobs = knobs
        self._expected: dict[Path, str] = {}

    @abstractmethod
    def files(self) -> tuple[Path, ...]:
        """Every file this knob may write."""

    @abstractmethod
    def show(self) -> dict[str, Any]:
        """The knob as it reads now."""

    @abstractmethod
    def pins(self, point: OperatingPoint) -> bool:
        """True when ``point`` pins this knob."""

    @abstractmethod
    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[Write]:
        """Writes pinning what ``point`` pins here; the rest back to ``ctx.baseline``."""

    @abstractmethod
    def expected(self, point: OperatingPoint, ctx: PlanContext) -> dict[Path, str]:
        """Files and values ``point`` pins here (written or not)."""

    def files_for(self, point: OperatingPoint) -> tuple[Path, ...]:
        return self.files() if self.pins(point) else ()

    def expect_point(self, point: OperatingPoint, ctx: PlanContext) -> None:
        for path, value in self.expected(point, ctx).items():
            self.expect(path, value)

    def drift(self, point: OperatingPoint, ctx: PlanContext) -> list[str]:
        messages: list[str] = []
        for path, value in self.expected(point, ctx).items():
            actual = read_value(path)
            if actual != value:
                messages.append(
                    f"drift: /{self.knobs.rel(path)} pinned {value}, now "
                    f"{actual if actual is not None else '(unreadable)'}"
                )
        return messages

    def apply(self, steps: Sequence[Write], runner: StepRunner | None = None) -> None:
        """Write ``steps`` in order (through ``runner``; default: direct, guarded)."""
        run = runner if runner is not None else DirectRunner(self.knobs.check_writable)
        for step in steps:
            run.write(step)
            self._expected[step.path] = step.value

    def expect(self, path: Path, value: str) -> None:
        """Also verify ``path`` reads ``value`` (a pinned value that needed no write)."""
        self._expected[path] = value

    def verify(self) -> list[Mismatch]:
        """Read back every value this knob wrote or expects; list the differences."""
        mismatches: list[Mismatch] = []
        for path, value in self._expected.items():
            actual = read_value(path)
            if actual != value.strip():
                mismatches.append(Mismatch(path, value.strip(), actual, self.name))
        return mismatches

    def reset_expectations(self) -> None:
        self._expected.clear()


class CoresKnob(FileKnob):
    """CPU hotplug: the first N CPUs online, the rest offline. cpu0 never goes offline."""

    name = "cpu-cores"

    def available(self) -> bool:
        return any(c.online_file is not None for c in self.knobs.cores)

    def files(self) -> tuple[Path, ...]:
        return tuple(c.online_file for c in self.knobs.cores if c.online_file is not None)

    def show(self) -> dict[str, Any]:
        return {"present": list(self.knobs.present), "online": list(online_cpus(self.knobs))}

    def online_for(self, count: int) -> tuple[int, ...]:
        """The CPUs that stay online for ``count`` cores (the lowest numbers)."""
        return online_for(self.knobs, count)

    def pins(self, point: OperatingPoint) -> bool:
        return point.cpu_cores is not None

    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[Write]:
        return self.plan(point.cpu_cores, ctx.baseline)

    def expected(self, point: OperatingPoint, ctx: PlanContext) -> dict[Path, str]:
        if point.cpu_cores is None:
            return {}
        keep = self.online_for(point.cpu_cores)
        return {
            c.online_file: "1" if c.cpu in keep else "0"
            for c in self.knobs.cores
            if c.online_file is not None
        }

    def plan(self, count: int | None, baseline: Baseline | None = None) -> list[Write]:
        """Writes that leave exactly ``count`` cores online (None: back to ``baseline``).

        CPUs are brought online before others go offline, so the count never dips.
        """
        ups: list[Write] = []
        downs: list[Write] = []
        keep = set(self.online_for(count)) if count is not None else None
        for core in self.knobs.cores:
            if core.online_file is None:
                continue
            if keep is None:
                value = _from_baseline(core.online_file, baseline)
            else:
                value = "1" if core.cpu in keep else "0"
            for write in _set(core.online_file, value, self.name):
                (ups if value == "1" else downs).append(write)
        return ups + downs


@dataclass(frozen=True)
class CpuTarget:
    """Pinned CPU frequency (Hz, min = max = freq) and governor; None = not pinned."""

    freq_hz: int | None = None
    governor: str | None = None
    online: tuple[int, ...] | None = None
    """CPUs that will be online (policies with none online are skipped)."""


class CpufreqKnob(FileKnob):
    """cpufreq policies: scaling_min_freq / scaling_max_freq (kHz) and scaling_governor."""

    name = "cpufreq"

    def available(self) -> bool:
        return bool(self.knobs.policies)

    def files(self) -> tuple[Path, ...]:
        return tuple(
            p
            for pol in self.knobs.policies
            for p in (pol.min_file, pol.max_file, pol.governor_file)
            if p.is_file()
        )

    def show(self) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        for pol in self.knobs.policies:
            shown[pol.name] = {
                "cpus": list(pol.cpus),
                "min_freq_hz": _khz(read_value(pol.min_file)),
                "max_freq_hz": _khz(read_value(pol.max_file)),
                "cur_freq_hz": _khz(read_value(pol.cur_file)),
                "governor": read_value(pol.governor_file),
            }
        return shown

    def target(self, point: OperatingPoint, ctx: PlanContext) -> CpuTarget:
        """``point``'s CPU target; the policies kept are those of the CPUs left online."""
        if point.cpu_cores is not None:
            online: tuple[int, ...] | None = online_for(self.knobs, point.cpu_cores)
        else:
            online = online_cpus(self.knobs) if ctx.live_online else None
        return CpuTarget(point.cpu_freq_hz, point.governor, online)

    def pins(self, point: OperatingPoint) -> bool:
        return point.cpu_freq_hz is not None or point.governor is not None

    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[Write]:
        return self.plan(self.target(point, ctx), ctx.baseline)

    def expected(self, point: OperatingPoint, ctx: PlanContext) -> dict[Path, str]:
        return self.pinned_paths(self.target(point, ctx))

    def plan(self, target: CpuTarget, baseline: Baseline | None = None) -> list[Write]:
        """Writes pinning every active policy: min/max first (safe order), then governor."""
        freq_writes: list[Write] = []
        gov_writes: list[Write] = []
        for pol in self.knobs.policies:
            if target.online is not None and not set(pol.cpus) & set(target.online):
                continue
            if target.freq_hz is not None:
                khz = str(target.freq_hz // 1000)
                new_min: str | None = khz
                new_max: str | None = khz
            else:
                new_min = _from_baseline(pol.min_file, baseline)
                new_max = _from_baseline(pol.max_file, baseline)
            freq_writes += min_max_writes(pol.min_file, pol.max_file, new_min, new_max, self.name)
            governor = target.governor or _from_baseline(pol.governor_file, baseline)
            gov_writes += _set(pol.governor_file, governor, self.name)
        return freq_writes + gov_writes

    def pinned_paths(self, target: CpuTarget) -> dict[Path, str]:
        """Files and values a pinned target must read back (written or not)."""
        expected: dict[Path, str] = {}
        for pol in self.knobs.policies:
            if target.online is not None and not set(pol.cpus) & set(target.online):
                continue
            if target.freq_hz is not None:
                khz = str(target.freq_hz // 1000)
                expected[pol.min_file] = khz
                expected[pol.max_file] = khz
            if target.governor is not None:
                expected[pol.governor_file] = target.governor
        return expected


def _khz(text: str | None) -> int | None:
    value = _int(text)
    return None if value is None else value * 1000


@dataclass(frozen=True)
class GpuTarget:
    """Pinned GPU frequency (Hz), devfreq governor, and railgating; None = not pinned."""

    freq_hz: int | None = None
    governor: str | None = None
    railgate: bool | None = None


class GpuKnob(FileKnob):
    """GPU devfreq: min_freq / max_freq (Hz), governor, and ``railgate_enable``."""

    name = "gpu"

    @property
    def gpu(self) -> GpuDevfreq | None:
        return self.knobs.gpu

    def available(self) -> bool:
        return self.gpu is not None

    def files(self) -> tuple[Path, ...]:
        g = self.gpu
        if g is None:
            return ()
        paths = [g.min_file, g.max_file, g.governor_file]
        if g.railgate_file is not None:
            paths.append(g.railgate_file)
        return tuple(p for p in paths if p.is_file())

    def show(self) -> dict[str, Any]:
        g = self.gpu
        if g is None:
            return {}
        return {
            "name": g.name,
            "min_freq_hz": _int(read_value(g.min_file)),
            "max_freq_hz": _int(read_value(g.max_file)),
            "cur_freq_hz": _int(read_value(g.cur_file)),
            "governor": read_value(g.governor_file),
            "railgate": read_value(g.railgate_file) if g.railgate_file is not None else None,
        }

    def pins(self, point: OperatingPoint) -> bool:
        return point.gpu_freq_hz is not None

    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[Write]:
        return self.plan(GpuTarget(point.gpu_freq_hz), ctx.baseline)

    def expected(self, point: OperatingPoint, ctx: PlanContext) -> dict[Path, str]:
        return self.pinned_paths(GpuTarget(point.gpu_freq_hz))

    def plan(self, target: GpuTarget, baseline: Baseline | None = None) -> list[Write]:
        """Railgating off first (a pinned clock on a gated GPU means nothing), then
        min/max in the safe order, then the governor."""
        g = self.gpu
        if g is None:
            return []
        writes: list[Write] = []
        if g.railgate_file is not None:
            railgate = (
                ("1" if target.railgate else "0")
                if target.railgate is not None
                else _from_baseline(g.railgate_file, baseline)
            )
            writes += _set(g.railgate_file, railgate, self.name)
        if target.freq_hz is not None:
            new_min: str | None = str(target.freq_hz)
            new_max: str | None = str(target.freq_hz)
        else:
            new_min = _from_baseline(g.min_file, baseline)
            new_max = _from_baseline(g.max_file, baseline)
        writes += min_max_writes(g.min_file, g.max_file, new_min, new_max, self.name)
        governor = target.governor or _from_baseline(g.governor_file, baseline)
        writes += _set(g.governor_file, governor, self.name)
        return writes

    def pinned_paths(self, target: GpuTarget) -> dict[Path, str]:
        g = self.gpu
        expected: dict[Path, str] = {}
        if g is None:
            return expected
        if target.freq_hz is not None:
            expected[g.min_file] = str(target.freq_hz)
            expected[g.max_file] = str(target.freq_hz)
        if target.governor is not None:
            expected[g.governor_file] = target.governor
        if target.railgate is not None and g.railgate_file is not None:
            expected[g.railgate_file] = "1" if target.railgate else "0"
        return expected


class EmcKnob(FileKnob):
    """EMC clock override: lock (``mrq_rate_locked`` / ``clk_state``) and the rate (Hz)."""

    name = "emc"

    @property
    def emc(self) -> EmcKnobs | None:
        return self.knobs.emc

    def available(self) -> bool:
        return self.emc is not None

    def files(self) -> tuple[Path, ...]:
        e = self.emc
        return () if e is None else (e.lock_file, e.set_file)

    def show(self) -> dict[str, Any]:
        e = self.emc
        if e is None:
            return {}
        return {
            "interface": e.interface,
            "rate_hz": _int(read_value(e.read_file)),
            "locked": read_value(e.lock_file) == "1",
            "min_rate_hz": e.min_rate_hz,
            "max_rate_hz": e.max_rate_hz,
            "cap_hz": _int(read_value(e.cap_file)) if e.cap_file is not None else None,
        }

    def pins(self, point: OperatingPoint) -> bool:
        return point.emc_freq_hz is not None

    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[Write]:
        return self.plan(point.emc_freq_hz, ctx.baseline)

    def expected(self, point: OperatingPoint, ctx: PlanContext) -> dict[Path, str]:
        return self.pinned_paths(point.emc_freq_hz, running=ctx.running)

    def plan(self, freq_hz: int | None, baseline: Baseline | None = None) -> list[Write]:
        """Pin: lock, then set the rate. Unpinned: back to the baseline lock (and rate
        only when the baseline itself was locked; an unlocked rate is a live value)."""
        e = self.emc
        if e is None:
            return []
        if freq_hz is not None:
            # The lock must be on before the rate request, or DVFS overrides it at once.
            return _set(e.lock_file, "1", self.name) + _set(e.set_file, str(freq_hz), self.name)
        lock = _from_baseline(e.lock_file, baseline)
        if lock is None:
            return []
        if lock == "1":
            rate = _from_baseline(e.set_file, baseline)
            return _set(e.set_file, rate, self.name) + _set(e.lock_file, lock, self.name)
        return _set(e.lock_file, lock, self.name)

    def pinned_paths(self, freq_hz: int | None, *, running: bool = False) -> dict[Path, str]:
        """Files a pinned rate must read back: the request, or with ``running`` the rate the
        clock runs at (T210 ``clk_rate`` follows ``clk_update_rate`` once applied)."""
        e = self.emc
        if e is None or freq_hz is None:
            return {}
        return {e.lock_file: "1", (e.read_file if running else e.set_file): str(freq_hz)}
