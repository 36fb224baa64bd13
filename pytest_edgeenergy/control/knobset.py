"""The writable knob files of one board, from the board layer's discovery.

:class:`KnobSet` turns :class:`pytest_edgeenergy.board.detect.Board` (read-only discovery)
into absolute paths the control layer may write. It is the *only* source of writable
paths: :meth:`KnobSet.check_writable` refuses anything else, so a bug or a tampered state
file can never make the tool write outside the discovered knobs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..board.detect import NVPMODEL_CONF, NVPMODEL_STATUS, Board, detect
from ..board.nvpmodel import NvpmodelConf, parse_conf
from ..board.sysfs import read_text
from .errors import UnknownKnobFile

GPU_RAILGATE_CANDIDATES = (
    "sys/devices/platform/gpu.0/railgate_enable",
    "sys/devices/gpu.0/railgate_enable",
)
NVPMODEL_BIN = "usr/bin/nvpmodel"
JETSON_CLOCKS_BIN = "usr/bin/jetson_clocks"
_READ_ONLY_ARGS = ("FREQ_TABLE",)


@dataclass(frozen=True)
class CoreFiles:
    cpu: int
    online_path: Path | None
    """None when the CPU cannot be hot-plugged (cpu0 on most boards)."""


@dataclass(frozen=True)
class PolicyFiles:
    """One cpufreq policy's writable files (values in kHz on disk)."""

    name: str
    cpus: tuple[int, ...]
    directory: Path
    available_freqs_hz: tuple[int, ...]
    available_governors: tuple[str, ...]

    @property
    def min_path(self) -> Path:
        return self.directory / "scaling_min_freq"

    @property
    def max_path(self) -> Path:
        return self.directory / "scaling_max_freq"

    @property
    def governor_path(self) -> Path:
        return self.directory / "scaling_governor"

    @property
    def cur_path(self) -> Path:
        return self.directory / "scaling_cur_freq"


@dataclass(frozen=True)
class GpuFiles:
    """The GPU devfreq directory's writable files (values in Hz)."""

    name: str
    directory: Path
    available_freqs_hz: tuple[int, ...]
    available_governors: tuple[str, ...]
    railgate_path: Path | None

    @property
    def min_path(self) -> Path:
        return self.directory / "min_freq"

    @property
    def max_path(self) -> Path:
        return self.directory / "max_freq"

    @property
    def governor_path(self) -> Path:
        return self.directory / "governor"

    @property
    def cur_path(self) -> Path:
        return self.directory / "cur_freq"


@dataclass(frozen=True)
class EmcFiles:
    """The EMC clock override (bpmp debugfs or T210 ``override.emc``); values in Hz."""

    interface: Literal["bpmp", "t210"]
    lock_path: Path
    """``mrq_rate_locked`` (bpmp) or ``clk_state`` (T210): 1 = rate pinned."""
    set_path: Path
    """``rate`` (bpmp) or ``clk_update_rate`` (T210)."""
    read_path: Path
    """``rate`` (bpmp) or ``clk_rate`` (T210)."""
    min_rate_hz: int | None
    max_rate_hz: int | None
    cap_path: Path | None
    cap_hz: int | None

    @property
    def highest_hz(self) -> int | None:
        """``max_rate`` lowered to nvpmodel's cap when ``0 < cap < max`` (as jetson_clocks)."""
        if self.max_rate_hz is None:
            return None
        if self.cap_hz is not None and 0 < self.cap_hz < self.max_rate_hz:
            return self.cap_hz
        return self.max_rate_hz


@dataclass(frozen=True)
class KnobSet:
    """Every knob file of the board under ``root`` that control may write."""

    root: Path
    simulated: bool
    present: tuple[int, ...]
    cores: tuple[CoreFiles, ...]
    policies: tuple[PolicyFiles, ...]
    gpu: GpuFiles | None
    emc: EmcFiles | None
    nvpmodel_conf: NvpmodelConf | None
    nvpmodel_conf_error: str | None
    nvpmodel_files: tuple[Path, ...]
    """Existing files the conf's PARAM blocks point at (``nvpmodel -m`` writes them)."""
    nvpmodel_status: Path | None
    nvpmodel_bin: Path | None
    jetson_clocks_bin: Path | None
    thermal_dirs: tuple[Path, ...]
    _allowed: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @property
    def real(self) -> bool:
        """True for the machine's own ``/`` (not a virtual board, not a fixture tree)."""
        return not self.simulated and os.path.realpath(self.root) == "/"

    @property
    def files(self) -> tuple[Path, ...]:
        """Every writable knob file that exists, in a stable order, without aliases."""
        return _dedupe(self._candidate_files())

    @property
    def volatile_files(self) -> frozenset[Path]:
        """Files that show live values (the EMC rate): restored only when we wrote them."""
        if self.emc is None:
            return frozenset()
        return frozenset({self.emc.set_path, self.emc.read_path})

    def _candidate_files(self) -> list[Path]:
        paths: list[Path] = [c.online_path for c in self.cores if c.online_path is not None]
        for policy in self.policies:
            paths += [policy.min_path, policy.max_path, policy.governor_path]
        if self.gpu is not None:
            paths += [self.gpu.min_path, self.gpu.max_path, self.gpu.governor_path]
            if self.gpu.railgate_path is not None:
                paths.append(self.gpu.railgate_path)
        if self.emc is not None:
            paths += [self.emc.lock_path, self.emc.set_path]
        paths += list(self.nvpmodel_files)
        if self.nvpmodel_status is not None:
            paths.append(self.nvpmodel_status)
        return [p for p in paths if p.is_file()]

    def allows(self, path: Path) -> bool:
        """True when ``path`` is (an alias of) a discovered knob file."""
        allowed = self._allowed or frozenset(os.path.realpath(p) for p in self.files)
        return os.path.realpath(path) in allowed

    def check_writable(self, path: Path) -> None:
        """Raise :class:`UnknownKnobFile` unless ``path`` is a discovered knob file."""
        if not self.allows(path):
            raise UnknownKnobFile(
                f"refusing to write {path}: it is not one of the knob files discovered under "
                f"{self.root} (cpufreq, CPU online, GPU devfreq, EMC, nvpmodel PARAM paths)"
            )

    def policy_for_cpu(self, cpu: int) -> PolicyFiles | None:
        return next((p for p in self.policies if cpu in p.cpus), None)

    def rel(self, path: Path) -> str:
        """``path`` relative to the root (as stored in state files)."""
        return str(path.relative_to(self.root))

    def require_conf(self) -> NvpmodelConf:
        """The nvpmodel conf, re-raising its parse error (with line) when it was broken."""
        if self.nvpmodel_conf is not None:
            return self.nvpmodel_conf
        conf_path = self.root / NVPMODEL_CONF
        text = read_text(conf_path)
        if text is None:
            from .errors import KnobUnavailable

            raise KnobUnavailable(f"no nvpmodel.conf under {self.root} ({conf_path})")
        return parse_conf(text, source=str(conf_path))  # raises NvpmodelConfError


def _dedupe(paths: list[Path]) -> tuple[Path, ...]:
    seen: set[str] = set()
    result: list[Path] = []
    for path in paths:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            result.append(path)
    return tuple(result)


def _executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _nvpmodel_files(conf: NvpmodelConf | None, root: Path) -> tuple[Path, ...]:
    if conf is None:
        return ()
    paths: list[Path] = []
    for param in conf.params.values():
        for arg, board_path in param.args.items():
            if arg.startswith(_READ_ONLY_ARGS):
                continue
            path = root / board_path.lstrip("/")
            if path.is_file():
                paths.append(path)
    return _dedupe(paths)


def knob_set(board: Board | KnobSet | Path) -> KnobSet:
    """The :class:`KnobSet` of a detected board (or of the board under a root path)."""
    if isinstance(board, KnobSet):
        return board
    if isinstance(board, Path):
        board = detect(board)
    root = board.root
    knobs = board.knobs
    cores = tuple(
        CoreFiles(c.cpu, root / c.online_path if c.online_path is not None else None)
        for c in knobs.cpu.cores
    )
    policies = tuple(
        PolicyFiles(
            name=p.name,
            cpus=p.cpus,
            directory=root / p.path,
            available_freqs_hz=p.available_freqs_hz,
            available_governors=p.available_governors,
        )
        for p in knobs.cpufreq
    )
    gpu: GpuFiles | None = None
    if knobs.gpu is not None:
        g = knobs.gpu
        directory = root / g.path
        railgate = next(
            (
                p
                for p in [directory / "device" / "railgate_enable"]
                + [root / c for c in GPU_RAILGATE_CANDIDATES]
                if p.is_file()
            ),
            None,
        )
        gpu = GpuFiles(g.name, directory, g.available_freqs_hz, g.available_governors, railgate)
    emc: EmcFiles | None = None
    e = knobs.emc
    if e is not None and e.interface is not None and e.path is not None:
        directory = root / e.path
        cap_path = root / e.cap_path if e.cap_path is not None else None
        if e.interface == "bpmp":
            emc = EmcFiles(
                "bpmp",
                directory / "mrq_rate_locked",
                directory / "rate",
                directory / "rate",
                e.min_rate_hz,
                e.max_rate_hz,
                cap_path,
                e.cap_hz,
            )
        else:
            emc = EmcFiles(
                "t210",
                directory / "clk_state",
                directory / "clk_update_rate",
                directory / "clk_rate",
                e.min_rate_hz,
                e.max_rate_hz,
                cap_path,
                e.cap_hz,
            )
        if not (emc.lock_path.is_file() and emc.set_path.is_file()):
            emc = None
    conf = board.nvpmodel
    conf_error = next((n for n in board.notes if n.startswith("nvpmodel.conf ignored")), None)
    status = root / NVPMODEL_STATUS
    result = KnobSet(
        root=root,
        simulated=board.identity.simulated,
        present=knobs.cpu.present,
        cores=cores,
        policies=policies,
        gpu=gpu,
        emc=emc,
        nvpmodel_conf=conf,
        nvpmodel_conf_error=conf_error,
        nvpmodel_files=_nvpmodel_files(conf, root),
        nvpmodel_status=status if status.is_file() else None,
        nvpmodel_bin=_executable(root / NVPMODEL_BIN),
        jetson_clocks_bin=_executable(root / JETSON_CLOCKS_BIN),
        thermal_dirs=tuple(root / z.path for z in knobs.thermal_zones),
    )
    allowed = frozenset(os.path.realpath(p) for p in result.files)
    object.__setattr__(result, "_allowed", allowed)
    return result
