"""The writable knob files of one board, from the board layer's discovery: the allow-list.

:class:`KnobSet` holds the knob descriptions :func:`pytest_edgeenergy.board.detect.detect`
found (:class:`~pytest_edgeenergy.board.knobs.CpuCore`,
:class:`~pytest_edgeenergy.board.knobs.CpufreqPolicy`,
:class:`~pytest_edgeenergy.board.knobs.GpuDevfreq`,
:class:`~pytest_edgeenergy.board.knobs.EmcKnobs`, each with its absolute files) and the
nvpmodel files, and is the *only* source of writable paths: :meth:`KnobSet.check_writable`
refuses anything else, so a bug or a tampered state file can never make the tool write
outside the discovered knobs. :func:`knob_set` builds it from a detected board; whoever
opens the board builds it once and hands it on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..board.detect import NVPMODEL_CONF, NVPMODEL_STATUS, Board, detect
from ..board.knobs import CpuCore, CpufreqPolicy, EmcKnobs, GpuDevfreq
from ..board.nvpmodel import NvpmodelConf, parse_conf
from ..board.sysfs import read_text
from ..safefs import resolves_inside
from .errors import KnobUnavailable, UnknownKnobFile

NVPMODEL_BIN = "usr/bin/nvpmodel"
SYSFS_DIR = "sys"
"""Every knob file (cpufreq, online, devfreq, EMC, nvpmodel PARAM paths) must resolve here."""
NVPMODEL_STATUS_DIR = "var/lib/nvpmodel"
JETSON_CLOCKS_BIN = "usr/bin/jetson_clocks"
_READ_ONLY_ARGS = ("FREQ_TABLE",)


@dataclass(frozen=True)
class KnobSet:
    """Every knob file of the board under ``root`` that control may write."""

    root: Path
    simulated: bool
    present: tuple[int, ...]
    cores: tuple[CpuCore, ...]
    policies: tuple[CpufreqPolicy, ...]
    gpu: GpuDevfreq | None
    """The first GPU devfreq device (the one control pins)."""
    emc: EmcKnobs | None
    """The EMC when its clock override can be pinned (lock and rate files exist)."""
    nvpmodel_conf: NvpmodelConf | None
    nvpmodel_conf_error: str | None
    """The board's :attr:`~pytest_edgeenergy.board.detect.Board.nvpmodel_conf_error`."""
    nvpmodel_files: tuple[Path, ...]
    """Existing files the conf's PARAM blocks point at (``nvpmodel -m`` writes them)."""
    nvpmodel_status: Path | None
    nvpmodel_bin: Path | None
    jetson_clocks_bin: Path | None
    thermal_dirs: tuple[Path, ...]
    refused: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Knob files discovery found but control will never write, by path: why (a symbolic
    link, or a path that resolves outside the board's sysfs)."""
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
        return frozenset({self.emc.set_file, self.emc.read_file})

    def _candidate_files(self) -> list[Path]:
        paths: list[Path] = [c.online_file for c in self.cores if c.online_file is not None]
        for policy in self.policies:
            paths += [policy.min_file, policy.max_file, policy.governor_file]
        if self.gpu is not None:
            paths += [self.gpu.min_file, self.gpu.max_file, self.gpu.governor_file]
            if self.gpu.railgate_file is not None:
                paths.append(self.gpu.railgate_file)
        if self.emc is not None:
            paths += [self.emc.lock_file, self.emc.set_file]
        paths += list(self.nvpmodel_files)
        if self.nvpmodel_status is not None:
            paths.append(self.nvpmodel_status)
        return [p for p in paths if p.is_file() and str(p) not in self.refused]

    def allows(self, path: Path) -> bool:
        """True when ``path`` is a discovered knob file that resolves inside the board
        (and is not itself a symbolic link)."""
        if str(path) in self.refused or os.path.islink(path):
            return False
        allowed = self._allowed or frozenset(os.path.realpath(p) for p in self.files)
        return os.path.realpath(path) in allowed and _inside_board(path, self.root)

    def check_writable(self, path: Path) -> None:
        """Raise :class:`UnknownKnobFile` unless ``path`` is a discovered knob file that
        resolves inside the board."""
        if self.allows(path):
            return
        why = self.refused.get(str(path))
        if why is None and os.path.realpath(path) in self._allowed:
            why = _outside_reason(path, self.root)  # discovered, reached through a link
        if why is not None:
            raise UnknownKnobFile(f"refusing to write {path}: {why}")
        raise UnknownKnobFile(
            f"refusing to write {path}: it is not one of the knob files discovered under "
            f"{self.root} (cpufreq, CPU online, GPU devfreq, EMC, nvpmodel PARAM paths)"
        )

    def policy_for_cpu(self, cpu: int) -> CpufreqPolicy | None:
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
            raise KnobUnavailable(f"no nvpmodel.conf under {self.root} ({conf_path})")
        return parse_conf(text, source=str(conf_path))  # raises NvpmodelConfError


def _bounds(path: Path, root: Path) -> Path:
    """Where a knob file must resolve: nvpmodel's status directory for its status file,
    the board's sysfs for every other."""
    status_dir = root / NVPMODEL_STATUS_DIR
    return status_dir if path.parent == status_dir else root / SYSFS_DIR


def _outside_reason(path: Path, root: Path) -> str | None:
    """Why control must not write ``path`` (a link, or outside the board); None if fine."""
    if os.path.islink(path):
        return (
            f"it is a symbolic link (to {os.readlink(path)}); a knob file is never written "
            "through a link"
        )
    bounds = _bounds(path, root)
    if not resolves_inside(path, bounds):
        return (
            f"it resolves to {os.path.realpath(path)}, outside the board's {bounds}; "
            "a knob file must lie inside it"
        )
    return None


def _inside_board(path: Path, root: Path) -> bool:
    return _outside_reason(path, root) is None


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


def knob_set(board: Board) -> KnobSet:
    """The :class:`KnobSet` of a detected board: its allow-list, built from the knob
    descriptions discovery found (no file is looked for again).

    Build it once per board and pass it on: a control session holds its own (see
    :class:`~pytest_edgeenergy.control.state.Session`), and the residency sampler of every
    energy window and the drift checks take that one.
    """
    return _build(board)


def knobs_at(root: Path) -> KnobSet:
    """Detect the board under ``root`` and build its :class:`KnobSet` (one detection; for
    a command or a script that has no :class:`Board` yet)."""
    return _build(detect(root))


def _build(board: Board) -> KnobSet:
    root = board.root
    knobs = board.knobs
    emc = knobs.emc if knobs.emc is not None and knobs.emc.can_pin else None
    conf = board.nvpmodel
    status = root / NVPMODEL_STATUS
    result = KnobSet(
        root=root,
        simulated=board.identity.simulated,
        present=knobs.cpu.present,
        cores=knobs.cpu.cores,
        policies=knobs.cpufreq,
        gpu=knobs.gpu,
        emc=emc,
        nvpmodel_conf=conf,
        nvpmodel_conf_error=board.nvpmodel_conf_error,
        nvpmodel_files=_nvpmodel_files(conf, root),
        nvpmodel_status=status if status.is_file() else None,
        nvpmodel_bin=_executable(root / NVPMODEL_BIN),
        jetson_clocks_bin=_executable(root / JETSON_CLOCKS_BIN),
        thermal_dirs=tuple(z.directory for z in knobs.thermal_zones),
    )
    for path in result._candidate_files():
        why = _outside_reason(path, root)
        if why is not None:
            result.refused[str(path)] = why
    allowed = frozenset(os.path.realpath(p) for p in result.files)
    object.__setattr__(result, "_allowed", allowed)
    return result
