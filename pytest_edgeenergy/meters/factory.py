"""Open a power source by name (``--edge-source``) for a board root.

``auto`` picks, in order: INA rails under the root, RAPL when ``sys/class/powercap`` exists
under the root, then NVML, but NVML only when the root is ``/``: NVML reads the machine
the code runs on, which is not the board a fixture or virtual tree describes.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import InvalidValue
from .source import PowerSource, SourceUnavailable

SOURCE_NAMES = ("auto", "ina", "tegrastats", "jtop", "nvml", "rapl")
POWERCAP_DIR = "sys/class/powercap"


def is_virtual_board(root: Path) -> bool:
    """True when ``root`` holds the marker file written by :mod:`pytest_edgeenergy.sim`."""
    from ..board.identity import VIRTUAL_BOARD_MARKER

    return (root / VIRTUAL_BOARD_MARKER).is_file()


def open_ina(root: Path) -> PowerSource:
    """InaSource over the rails discovered under ``root``; SourceUnavailable if none."""
    from ..board.rails import discover_rails, scanned_dirs
    from .ina import InaSource

    rails = discover_rails(root)
    if not rails.rails:
        raise SourceUnavailable(
            f"no INA3221/INA238 power rails found under {root} "
            f"(scanned {', '.join(scanned_dirs(root))})"
        )
    return InaSource(rails, simulated=is_virtual_board(root))


def _open_named(name: str, root: Path, interval_s: float) -> PowerSource:
    source: PowerSource
    if name == "ina":
        source = open_ina(root)
    elif name == "tegrastats":
        from .tegrastats import TegrastatsSource

        source = TegrastatsSource(root, interval_s=interval_s)
    elif name == "rapl":
        from .rapl import RaplSource

        source = RaplSource(root)
    elif name == "nvml":
        from .nvml import NvmlSource

        source = NvmlSource()
    elif name == "jtop":
        from .jtop_source import JtopSource

        source = JtopSource()
    else:  # pragma: no cover - guarded by open_source
        raise AssertionError(name)
    return source


def open_source(name: str, root: Path, *, interval_s: float) -> PowerSource:
    """Open source ``name`` (one of :data:`SOURCE_NAMES`) reading the board under ``root``.

    Raises ValueError for an unknown name or a bad interval, SourceUnavailable when the
    source cannot work here (the message says why; for ``auto``, why each candidate failed).
    """
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in SOURCE_NAMES:
        raise InvalidValue(f"power source {name!r}: unknown, allowed: {', '.join(SOURCE_NAMES)}")
    if not (isinstance(interval_s, (int, float)) and math.isfinite(interval_s) and interval_s > 0):
        raise InvalidValue(f"interval_s={interval_s!r}: must be a finite number of seconds > 0")
    root = Path(root)
    if key != "auto":
        return _open_named(key, root, interval_s)

    reasons: list[str] = []
    candidates = ["ina"]
    if (root / POWERCAP_DIR).is_dir():
        candidates.append("rapl")
    else:
        reasons.append(f"rapl: no {root / POWERCAP_DIR}")
    if root.resolve() == Path("/"):
        candidates.append("nvml")
    else:
        reasons.append(f"nvml: not tried, root {root} is not / (NVML reads this machine)")
    for candidate in candidates:
        try:
            return _open_named(candidate, root, interval_s)
        except (SourceUnavailable, ImportError) as exc:
            reasons.append(f"{candidate}: {exc}")
    raise SourceUnavailable(f"no power source found for root {root}: " + "; ".join(reasons))
