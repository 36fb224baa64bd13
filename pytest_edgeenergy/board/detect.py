"""Detect a whole board under a root, and its ``edgeenergy board --json`` form.

Nothing here runs a command (no ``nvpmodel``): the current power mode comes from
``var/lib/nvpmodel/status`` when that file exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .identity import read_identity
from .knobs import Knobs, read_knobs
from .nvpmodel import NvpmodelConf, NvpmodelConfError, parse_conf
from .rails import NoRailsFound, discover_rails, require_rails
from .sysfs import read_text, relative_to_root
from .types import Identity, Rail, RailMap

__all__ = [
    "Board",
    "CurrentPowerMode",
    "NoRailsFound",
    "board_json",
    "detect",
    "read_power_mode_status",
]

NVPMODEL_CONF = "etc/nvpmodel.conf"
NVPMODEL_STATUS = "var/lib/nvpmodel/status"
_PMODE_RE = re.compile(r"\bpmode:\s*(\d+)")


@dataclass(frozen=True)
class CurrentPowerMode:
    """The power mode recorded by nvpmodel; ``name`` from the conf when it defines the id."""

    id: int
    name: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name}


@dataclass(frozen=True)
class Board:
    """Everything known about the board under ``root``."""

    root: Path
    identity: Identity
    rails: RailMap
    knobs: Knobs
    nvpmodel: NvpmodelConf | None
    power_mode: CurrentPowerMode | None
    notes: tuple[str, ...] = ()
    nvpmodel_conf_error: str | None = None
    """Why ``etc/nvpmodel.conf`` exists but was ignored (its parse error, with the line);
    None when it parsed or is absent. The same text is in ``notes`` for people."""

    def require_rails(self) -> RailMap:
        """The rails, or :class:`NoRailsFound` when the board has none."""
        return require_rails(self.rails, self.root)


def read_power_mode_status(root: Path, conf: NvpmodelConf | None) -> CurrentPowerMode | None:
    """Current mode id from ``var/lib/nvpmodel/status`` (``pmode:0002 fmode:...``)."""
    text = read_text(root / NVPMODEL_STATUS)
    if text is None:
        return None
    match = _PMODE_RE.search(text)
    if match is None:
        return None
    mode_id = int(match.group(1))
    name = next((m.name for m in conf.modes if m.id == mode_id), None) if conf else None
    return CurrentPowerMode(mode_id, name)


def detect(root: Path) -> Board:
    """Read identity, rails, knobs and nvpmodel state under ``root``. Never raises for a
    board without rails or with a broken nvpmodel.conf: those become notes."""
    notes: list[str] = []
    conf: NvpmodelConf | None = None
    conf_error: str | None = None
    conf_path = root / NVPMODEL_CONF
    conf_text = read_text(conf_path)
    if conf_text is not None:
        try:
            conf = parse_conf(conf_text, source=str(conf_path))
        except NvpmodelConfError as exc:
            conf_error = str(exc)
            notes.append(f"nvpmodel.conf ignored: {conf_error}")
    rails = discover_rails(root)
    if not rails.rails:
        notes.append(f"no INA3221/INA238 power rails found under {root}")
    return Board(
        root=root,
        identity=read_identity(root),
        rails=rails,
        knobs=read_knobs(root),
        nvpmodel=conf,
        power_mode=read_power_mode_status(root, conf),
        notes=tuple(notes),
        nvpmodel_conf_error=conf_error,
    )


def rail_unit(rail: Rail) -> str:
    """How a rail's watts are formed from its files."""
    if rail.power_file is None:
        return "W via mV*mA"
    if rail.power_scale_w == 1e-6:
        return "W via uW"
    if rail.power_scale_w == 1e-3:
        return "W via mW"
    return f"W via x{rail.power_scale_w:g}"


def _rail_json(rail: Rail, root: Path) -> dict[str, Any]:
    return {
        "name": rail.name,
        "is_total": rail.is_total,
        "chip": rail.chip,
        "layout": rail.layout,
        "device": rail.device,
        "channel": rail.channel,
        "directory": relative_to_root(rail.directory, root),
        "files": [relative_to_root(f, root) for f in rail.files],
        "unit": rail_unit(rail),
    }


def board_json(board: Board) -> dict[str, Any]:
    """The ``edgeenergy board --json`` document (see DESIGN.md, contract)."""
    identity = board.identity
    rails = board.rails
    if rails.total_rail is not None:
        total_note: str | None = f"total is the module-input rail {rails.total_rail}"
    elif rails.rails:
        total_note = next(
            (n for n in rails.notes if n.startswith("no module-input rail")),
            "total is the sum of all rails",
        )
    else:
        total_note = "no rails found"
    conf = board.nvpmodel
    return {
        "root": str(board.root),
        "identity": {
            "model": identity.model,
            "soc": identity.soc,
            "l4t": identity.l4t,
            "jetpack": identity.jetpack,
            "simulated": identity.simulated,
            "sim_model": identity.sim_model,
            "module": identity.module,
            "compatible": list(identity.compatible),
            "kernel": identity.kernel,
        },
        "rails": [_rail_json(r, board.root) for r in rails.rails],
        "total": {"rail": rails.total_rail, "method": rails.total_method, "note": total_note},
        "knobs": board.knobs.to_json(),
        "power_modes": [{"id": m.id, "name": m.name} for m in conf.modes] if conf else [],
        "default_power_mode": conf.default_id if conf else None,
        "current_power_mode": board.power_mode.to_json() if board.power_mode else None,
        "update_interval_ms": (
            round(rails.update_interval_s * 1000.0, 6)
            if rails.update_interval_s is not None
            else None
        ),
        "notes": list(rails.notes) + list(board.notes),
    }
