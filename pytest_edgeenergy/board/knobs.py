"""Read-only view of the board's knobs under a root: CPUs, cpufreq, GPU devfreq, EMC,
thermal zones and memory. The control layer writes; this module only reads.

Every frequency is held in Hz (cpufreq's kHz files are converted), temperatures in °C,
memory in bytes. Paths in the values are relative to the root, as strings (the form
``edgeenergy board --json`` shows); each value also holds its ``root``, and the absolute
files the control layer reads and writes (``min_file``, ``online_file``, ...) are derived
from the pair by :func:`under`, the one place that joins them. Discovery runs once, in
:func:`pytest_edgeenergy.board.detect.detect`; the control layer uses these values as they
are and never looks for knob files again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from .sysfs import (
    CpuListError,
    parse_cpu_list,
    read_int,
    read_ints,
    read_text,
    read_words,
    relative_to_root,
)

CPU_DIR = "sys/devices/system/cpu"
DEVFREQ_CLASS_DIR = "sys/class/devfreq"
GPU_OF_NODE_NAMES = frozenset({"gv11b", "gp10b", "ga10b", "gb10b", "gpu"})
GPU_DEVFREQ_NAMES = (
    "57000000.gpu",
    "17000000.gp10b",
    "17000000.gv11b",
    "17000000.ga10b",
    "17000000.gpu",
)
# Bounded fallback search (a full recursive walk of a real /sys is slow and loops).
GPU_DEVFREQ_FALLBACK_GLOBS = (
    "sys/devices/*/devfreq/{name}",
    "sys/devices/platform/*/devfreq/{name}",
    "sys/devices/platform/bus@0/*/devfreq/{name}",
    "sys/devices/{name}/devfreq_dev",
    "sys/devices/platform/{name}/devfreq_dev",
)
EMC_BPMP_DIR = "sys/kernel/debug/bpmp/debug/clk/emc"
EMC_T210_OVERRIDE_DIR = "sys/kernel/debug/clk/override.emc"
EMC_T210_BWMGR_DIR = "sys/kernel/debug/tegra_bwmgr"
EMC_CAP_FILES = ("sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "sys/kernel/nvpmodel_clk_cap/emc")
EMC_OVERRIDE_FILES: dict[str, tuple[str, str, str]] = {
    "bpmp": ("mrq_rate_locked", "rate", "rate"),
    "t210": ("clk_state", "clk_update_rate", "clk_rate"),
}
"""Per interface: the lock file (1 = rate pinned), the rate request, the running rate."""
GPU_RAILGATE_CANDIDATES = (
    "sys/devices/platform/gpu.0/railgate_enable",
    "sys/devices/gpu.0/railgate_enable",
)
THERMAL_DIR = "sys/devices/virtual/thermal"
OFFLINE_TEMP_MILLI_C = -256000
"""Temperature a power-gated zone reports on some releases (tegrastats prints -256C)."""


def under(root: Path, rel: str) -> Path:
    """The absolute file of a root-relative path held in a knob value."""
    return root / rel


def _json(value: Any, *hidden: str) -> dict[str, Any]:
    data = asdict(value)
    for name in ("root", *hidden):
        data.pop(name, None)
    return data


def _khz_to_hz(value: int | None) -> int | None:
    return None if value is None else value * 1000


def _num(name: str, prefix: str) -> int | None:
    rest = name.removeprefix(prefix)
    return int(rest) if rest != name and rest.isdigit() else None


@dataclass(frozen=True)
class CpuCore:
    """One CPU and its hotplug file."""

    cpu: int
    online: bool | None
    """None when unknown (no per-CPU ``online`` file and no usable ``online`` list)."""
    online_path: str | None
    """``sys/devices/system/cpu/cpuN/online`` when it exists (cpu0 often has none)."""
    root: Path = field(kw_only=True, repr=False, compare=False)
    """The board's root (joined with the relative paths by :func:`under`; not in JSON)."""

    @property
    def online_file(self) -> Path | None:
        """None when the CPU cannot be hot-plugged (cpu0 on most boards)."""
        return under(self.root, self.online_path) if self.online_path is not None else None

    def to_json(self) -> dict[str, Any]:
        return _json(self)


@dataclass(frozen=True)
class CpuKnobs:
    """CPUs present and online."""

    present: tuple[int, ...]
    online: tuple[int, ...]
    cores: tuple[CpuCore, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "present": list(self.present),
            "online": list(self.online),
            "cores": [c.to_json() for c in self.cores],
        }


class _ClockFiles:
    """The files of a clock domain (a cpufreq policy, a devfreq device): min, max, governor
    and current rate, named by the class's ``FILE_NAMES`` in its directory ``path``."""

    FILE_NAMES: ClassVar[tuple[str, str, str, str]]
    root: Path
    path: str

    @property
    def directory(self) -> Path:
        return under(self.root, self.path)

    @property
    def min_file(self) -> Path:
        return self.directory / self.FILE_NAMES[0]

    @property
    def max_file(self) -> Path:
        return self.directory / self.FILE_NAMES[1]

    @property
    def governor_file(self) -> Path:
        return self.directory / self.FILE_NAMES[2]

    @property
    def cur_file(self) -> Path:
        return self.directory / self.FILE_NAMES[3]


@dataclass(frozen=True)
class CpufreqPolicy(_ClockFiles):
    """A cpufreq policy (one clock shared by ``cpus``)."""

    name: str
    """``policyN`` or, on trees without ``cpufreq/policyN``, ``cpuN``."""
    path: str
    cpus: tuple[int, ...]
    available_freqs_hz: tuple[int, ...]
    min_freq_hz: int | None
    max_freq_hz: int | None
    cur_freq_hz: int | None
    hw_min_freq_hz: int | None
    """``cpuinfo_min_freq``."""
    hw_max_freq_hz: int | None
    """``cpuinfo_max_freq``."""
    governor: str | None
    available_governors: tuple[str, ...]
    root: Path = field(kw_only=True, repr=False, compare=False)
    """The board's root (joined with the relative paths by :func:`under`; not in JSON)."""

    FILE_NAMES: ClassVar[tuple[str, str, str, str]] = (
        "scaling_min_freq",  # kHz on disk
        "scaling_max_freq",
        "scaling_governor",
        "scaling_cur_freq",
    )

    def to_json(self) -> dict[str, Any]:
        data = _json(self)
        data["cpus"] = list(self.cpus)
        data["available_freqs_hz"] = list(self.available_freqs_hz)
        data["available_governors"] = list(self.available_governors)
        return data


@dataclass(frozen=True)
class GpuDevfreq(_ClockFiles):
    """The GPU's devfreq device."""

    name: str
    path: str
    """Resolved devfreq directory relative to the root."""
    of_node_name: str | None
    available_freqs_hz: tuple[int, ...]
    min_freq_hz: int | None
    max_freq_hz: int | None
    cur_freq_hz: int | None
    governor: str | None
    available_governors: tuple[str, ...]
    railgate_path: str | None = field(default=None, kw_only=True)
    """``railgate_enable`` of the GPU device when it exists (not in the JSON document)."""
    root: Path = field(kw_only=True, repr=False, compare=False)
    """The board's root (joined with the relative paths by :func:`under`; not in JSON)."""

    FILE_NAMES: ClassVar[tuple[str, str, str, str]] = (
        "min_freq",
        "max_freq",
        "governor",
        "cur_freq",
    )

    @property
    def railgate_file(self) -> Path | None:
        return under(self.root, self.railgate_path) if self.railgate_path is not None else None

    def to_json(self) -> dict[str, Any]:
        data = _json(self, "railgate_path")
        data["available_freqs_hz"] = list(self.available_freqs_hz)
        data["available_governors"] = list(self.available_governors)
        return data


EmcInterface = Literal["bpmp", "t210"]


@dataclass(frozen=True)
class EmcKnobs:
    """External memory controller clock."""

    interface: EmcInterface | None
    """``bpmp`` (T186/T194/T234 debugfs), ``t210`` (Nano/TX1), None (cap file only)."""
    path: str | None
    rate_hz: int | None
    min_rate_hz: int | None
    max_rate_hz: int | None
    locked: bool | None
    """bpmp ``mrq_rate_locked`` / T210 ``override.emc/clk_state``: rate pinned."""
    cap_hz: int | None
    """nvpmodel's EMC cap; 0 means no cap."""
    cap_path: str | None
    can_pin: bool = field(default=False, kw_only=True)
    """True when the override's lock and rate-request files exist (not in the JSON)."""
    root: Path = field(kw_only=True, repr=False, compare=False)
    """The board's root (joined with the relative paths by :func:`under`; not in JSON)."""

    def _override_file(self, role: int) -> Path:
        if self.interface is None or self.path is None:
            raise ValueError("this EMC has no clock override interface (only a cap file)")
        return under(self.root, self.path) / EMC_OVERRIDE_FILES[self.interface][role]

    @property
    def lock_file(self) -> Path:
        """``mrq_rate_locked`` (bpmp) or ``clk_state`` (T210): 1 = rate pinned."""
        return self._override_file(0)

    @property
    def set_file(self) -> Path:
        """``rate`` (bpmp) or ``clk_update_rate`` (T210)."""
        return self._override_file(1)

    @property
    def read_file(self) -> Path:
        """``rate`` (bpmp) or ``clk_rate`` (T210): the rate the clock runs at."""
        return self._override_file(2)

    @property
    def cap_file(self) -> Path | None:
        return under(self.root, self.cap_path) if self.cap_path is not None else None

    @property
    def highest_hz(self) -> int | None:
        """``max_rate`` lowered to nvpmodel's cap when ``0 < cap < max`` (as jetson_clocks)."""
        if self.max_rate_hz is None:
            return None
        if self.cap_hz is not None and 0 < self.cap_hz < self.max_rate_hz:
            return self.cap_hz
        return self.max_rate_hz

    def to_json(self) -> dict[str, Any]:
        return _json(self, "can_pin")


@dataclass(frozen=True)
class ThermalZone:
    """``thermal_zoneN`` with its type and temperature."""

    zone: str
    type: str | None
    temp_c: float | None
    """None when unreadable (EAGAIN from a power-gated block), garbage, or -256 °C."""
    path: str
    root: Path = field(kw_only=True, repr=False, compare=False)
    """The board's root (joined with the relative paths by :func:`under`; not in JSON)."""

    @property
    def directory(self) -> Path:
        return under(self.root, self.path)

    def to_json(self) -> dict[str, Any]:
        return _json(self)


@dataclass(frozen=True)
class MemInfo:
    """``MemTotal`` / ``MemAvailable`` from ``/proc/meminfo``."""

    mem_total_bytes: int | None
    mem_available_bytes: int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Knobs:
    """Everything the control layer may later pin, as currently read."""

    cpu: CpuKnobs
    cpufreq: tuple[CpufreqPolicy, ...]
    gpus: tuple[GpuDevfreq, ...]
    """Usually one; Thor may expose several ``gpu-gpc-N``."""
    emc: EmcKnobs | None
    thermal_zones: tuple[ThermalZone, ...]
    memory: MemInfo | None
    notes: tuple[str, ...] = ()

    @property
    def gpu(self) -> GpuDevfreq | None:
        """The first GPU devfreq device, or None."""
        return self.gpus[0] if self.gpus else None

    def to_json(self) -> dict[str, Any]:
        return {
            "cpu": self.cpu.to_json(),
            "cpufreq": [p.to_json() for p in self.cpufreq],
            "gpu": self.gpu.to_json() if self.gpu is not None else None,
            "gpus": [g.to_json() for g in self.gpus],
            "emc": self.emc.to_json() if self.emc is not None else None,
            "thermal_zones": [z.to_json() for z in self.thermal_zones],
            "memory": self.memory.to_json() if self.memory is not None else None,
            "notes": list(self.notes),
        }


def _read_cpu_list(path: Path, notes: list[str], root: Path) -> tuple[int, ...] | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return parse_cpu_list(text)
    except CpuListError as exc:
        notes.append(f"{relative_to_root(path, root)}: {exc}")
        return None


def read_cpus(root: Path, notes: list[str]) -> CpuKnobs:
    """CPUs under ``sys/devices/system/cpu``."""
    cpu_dir = root / CPU_DIR
    try:
        entries = list(cpu_dir.iterdir())
    except OSError:
        entries = []
    numbers = sorted(n for e in entries if (n := _num(e.name, "cpu")) is not None)
    present = _read_cpu_list(cpu_dir / "present", notes, root)
    if present is None:
        present = tuple(numbers)
    online_list = _read_cpu_list(cpu_dir / "online", notes, root)
    cores: list[CpuCore] = []
    for cpu in sorted(set(numbers) | set(present)):
        online_file = cpu_dir / f"cpu{cpu}" / "online"
        value = read_int(online_file)
        online: bool | None
        if value is not None:
            online = value == 1
        elif online_list is not None:
            online = cpu in online_list
        else:
            online = None
        cores.append(
            CpuCore(
                cpu=cpu,
                online=online,
                online_path=relative_to_root(online_file, root) if online_file.exists() else None,
                root=root,
            )
        )
    if online_list is None:
        online_list = tuple(c.cpu for c in cores if c.online)
    return CpuKnobs(present=present, online=online_list, cores=tuple(cores))


def _policy(root: Path, directory: Path, name: str, default_cpus: tuple[int, ...]) -> CpufreqPolicy:
    cpus: tuple[int, ...] | None = None
    for file_name in ("related_cpus", "affected_cpus"):
        text = read_text(directory / file_name)
        if text:
            # related_cpus is space separated ("0 1 2 3"), never a range list.
            try:
                cpus = tuple(sorted(int(t) for t in text.split()))
                break
            except ValueError:
                continue
    freqs_khz = read_ints(directory / "scaling_available_frequencies") or ()
    cur = read_int(directory / "scaling_cur_freq")
    if cur is None:
        cur = read_int(directory / "cpuinfo_cur_freq")
    return CpufreqPolicy(
        name=name,
        path=relative_to_root(directory, root),
        cpus=cpus if cpus is not None else default_cpus,
        available_freqs_hz=tuple(sorted(f * 1000 for f in freqs_khz)),
        min_freq_hz=_khz_to_hz(read_int(directory / "scaling_min_freq")),
        max_freq_hz=_khz_to_hz(read_int(directory / "scaling_max_freq")),
        cur_freq_hz=_khz_to_hz(cur),
        hw_min_freq_hz=_khz_to_hz(read_int(directory / "cpuinfo_min_freq")),
        hw_max_freq_hz=_khz_to_hz(read_int(directory / "cpuinfo_max_freq")),
        governor=read_text(directory / "scaling_governor") or None,
        available_governors=read_words(directory / "scaling_available_governors") or (),
        root=root,
    )


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def read_cpufreq(root: Path) -> tuple[CpufreqPolicy, ...]:
    """cpufreq policies: ``cpufreq/policyN`` dirs, else per-CPU ``cpuN/cpufreq`` dirs."""
    cpu_dir = root / CPU_DIR
    candidates: list[tuple[Path, str, tuple[int, ...]]] = []
    try:
        policy_entries = list((cpu_dir / "cpufreq").iterdir())
    except OSError:
        policy_entries = []
    for entry in policy_entries:
        number = _num(entry.name, "policy")
        if number is not None and entry.is_dir():
            candidates.append((entry, entry.name, (number,)))
    candidates.sort(key=lambda c: c[2])
    try:
        cpu_entries = list(cpu_dir.iterdir())
    except OSError:
        cpu_entries = []
    per_cpu = sorted(
        (n, e / "cpufreq")
        for e in cpu_entries
        if (n := _num(e.name, "cpu")) is not None and (e / "cpufreq").is_dir()
    )
    candidates.extend((d, f"cpu{n}", (n,)) for n, d in per_cpu)

    policies: list[CpufreqPolicy] = []
    seen_dirs: set[Path] = set()
    covered: set[int] = set()
    for directory, name, default_cpus in candidates:
        resolved = _resolved(directory)
        if resolved in seen_dirs:
            continue
        seen_dirs.add(resolved)
        policy = _policy(root, directory, name, default_cpus)
        if policy.cpus and set(policy.cpus) <= covered:
            continue
        covered.update(policy.cpus)
        policies.append(policy)
    return tuple(policies)


def _devfreq(root: Path, directory: Path, of_node_name: str | None) -> GpuDevfreq:
    resolved = _resolved(directory)
    root_resolved = _resolved(root)
    try:
        rel = str(resolved.relative_to(root_resolved))
    except ValueError:
        # A symlink that leaves the root: report the path as found.
        rel = relative_to_root(directory, root)
    railgate = next(
        (
            c
            for c in (f"{rel}/device/railgate_enable", *GPU_RAILGATE_CANDIDATES)
            if under(root, c).is_file()
        ),
        None,
    )
    return GpuDevfreq(
        name=resolved.name if resolved.name != "devfreq_dev" else directory.parent.name,
        path=rel,
        of_node_name=of_node_name,
        available_freqs_hz=tuple(sorted(read_ints(directory / "available_frequencies") or ())),
        min_freq_hz=read_int(directory / "min_freq"),
        max_freq_hz=read_int(directory / "max_freq"),
        cur_freq_hz=read_int(directory / "cur_freq"),
        governor=read_text(directory / "governor") or None,
        available_governors=read_words(directory / "available_governors") or (),
        railgate_path=railgate,
        root=root,
    )


def _is_gpu_devfreq(name: str, of_node_name: str | None) -> bool:
    if name.startswith("gpu-gpc"):
        return True
    if of_node_name is None:
        return False
    node = of_node_name.lower()
    return node in GPU_OF_NODE_NAMES or "gpu" in node


def read_gpu_devfreq(root: Path) -> tuple[GpuDevfreq, ...]:
    """GPU devfreq devices, via ``sys/class/devfreq`` or known ``sys/devices`` paths."""
    found: list[GpuDevfreq] = []
    seen: set[Path] = set()
    try:
        class_entries = sorted((root / DEVFREQ_CLASS_DIR).iterdir())
    except OSError:
        class_entries = []
    for entry in class_entries:
        of_node_name = read_text(entry / "device" / "of_node" / "name")
        if not _is_gpu_devfreq(entry.name, of_node_name):
            continue
        resolved = _resolved(entry)
        if resolved not in seen:
            seen.add(resolved)
            found.append(_devfreq(root, entry, of_node_name))
    if found:
        return tuple(found)
    for pattern in GPU_DEVFREQ_FALLBACK_GLOBS:
        for name in GPU_DEVFREQ_NAMES:
            for directory in sorted(root.glob(pattern.format(name=name))):
                resolved = _resolved(directory)
                if directory.is_dir() and resolved not in seen:
                    seen.add(resolved)
                    found.append(_devfreq(root, directory, None))
    return tuple(found)


def read_emc(root: Path) -> EmcKnobs | None:
    """EMC clock state from debugfs and nvpmodel's cap file; None when nothing exists."""
    cap_file = next((root / p for p in EMC_CAP_FILES if (root / p).is_file()), None)
    cap_hz = read_int(cap_file) if cap_file is not None else None
    cap_path = relative_to_root(cap_file, root) if cap_file is not None else None
    bpmp = root / EMC_BPMP_DIR
    if bpmp.is_dir():
        locked = read_int(bpmp / "mrq_rate_locked")
        return EmcKnobs(
            interface="bpmp",
            path=relative_to_root(bpmp, root),
            rate_hz=read_int(bpmp / "rate"),
            min_rate_hz=read_int(bpmp / "min_rate"),
            max_rate_hz=read_int(bpmp / "max_rate"),
            locked=None if locked is None else locked == 1,
            cap_hz=cap_hz,
            cap_path=cap_path,
            can_pin=_override_present(bpmp, "bpmp"),
            root=root,
        )
    override = root / EMC_T210_OVERRIDE_DIR
    if override.is_dir():
        bwmgr = root / EMC_T210_BWMGR_DIR
        state = read_int(override / "clk_state")
        return EmcKnobs(
            interface="t210",
            path=relative_to_root(override, root),
            rate_hz=read_int(override / "clk_rate"),
            min_rate_hz=read_int(bwmgr / "emc_min_rate"),
            max_rate_hz=read_int(bwmgr / "emc_max_rate"),
            locked=None if state is None else state == 1,
            cap_hz=cap_hz,
            cap_path=cap_path,
            can_pin=_override_present(override, "t210"),
            root=root,
        )
    if cap_file is not None:
        return EmcKnobs(None, None, None, None, None, None, cap_hz, cap_path, root=root)
    return None


def _override_present(directory: Path, interface: EmcInterface) -> bool:
    lock, request, _ = EMC_OVERRIDE_FILES[interface]
    return (directory / lock).is_file() and (directory / request).is_file()


def read_thermal_zones(root: Path) -> tuple[ThermalZone, ...]:
    """``thermal_zoneN`` type and temperature (m°C -> °C)."""
    thermal = root / THERMAL_DIR
    try:
        entries = list(thermal.iterdir())
    except OSError:
        return ()
    zones = sorted(
        (n, e) for e in entries if (n := _num(e.name, "thermal_zone")) is not None and e.is_dir()
    )
    result: list[ThermalZone] = []
    for _, entry in zones:
        milli_c = read_int(entry / "temp")
        temp_c = None if milli_c is None or milli_c == OFFLINE_TEMP_MILLI_C else milli_c / 1000.0
        result.append(
            ThermalZone(
                zone=entry.name,
                type=read_text(entry / "type") or None,
                temp_c=temp_c,
                path=relative_to_root(entry, root),
                root=root,
            )
        )
    return tuple(result)


def parse_meminfo(text: str) -> MemInfo:
    """``MemTotal`` and ``MemAvailable`` (kB in the file) as bytes."""
    values = parse_meminfo_fields(text)
    return MemInfo(values.get("MemTotal"), values.get("MemAvailable"))


def parse_meminfo_fields(text: str) -> dict[str, int]:
    """Every ``Key: N kB`` line of ``/proc/meminfo`` text in bytes (counts stay counts)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if not parts:
            continue
        try:
            amount = int(parts[0])
        except ValueError:
            continue
        unit = parts[1].lower() if len(parts) > 1 else ""
        values[key.strip()] = amount * 1024 if unit == "kb" else amount
    return values


def read_knobs(root: Path) -> Knobs:
    """Read every knob under ``root``; missing parts are empty or None, never an error."""
    notes: list[str] = []
    cpu = read_cpus(root, notes)
    gpus = read_gpu_devfreq(root)
    if not gpus:
        notes.append("no GPU devfreq device found")
    meminfo_text = read_text(root / "proc/meminfo")
    return Knobs(
        cpu=cpu,
        cpufreq=read_cpufreq(root),
        gpus=gpus,
        emc=read_emc(root),
        thermal_zones=read_thermal_zones(root),
        memory=parse_meminfo(meminfo_text) if meminfo_text is not None else None,
        notes=tuple(notes),
    )
