"""Open a power source by name (``--edge-source``) for a detected board.

The source is opened from the :class:`~pytest_edgeenergy.board.detect.Board` the session
detected: the INA source reads the rails discovered then (``board.rails``), never a second
discovery. ``auto`` picks, in order: INA rails on the board, RAPL when
``sys/class/powercap`` exists under its root, then NVML, but NVML only when the root is
``/``: NVML reads the machine the code runs on, which is not the board a fixture or
virtual tree describes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import InvalidValue
from ..registry import SOURCES_GROUP, ExtensionError, builtin_names, load, names
from .source import PowerSource, SourceUnavailable

if TYPE_CHECKING:
    from ..board.detect import Board

AUTO = "auto"
"""Not a source but the choice among the built-ins (INA rails, RAPL, NVML)."""
POWERCAP_DIR = "sys/class/powercap"


def source_names() -> tuple[str, ...]:
    """``auto`` and every registered source (``pytest_edgeenergy.sources`` entry points of
    this project and of installed plugins), sorted."""
    return names(SOURCES_GROUP)


def builtin_source_names() -> tuple[str, ...]:
    """``auto`` and the sources this project registers (cheap: no scan of packages)."""
    return builtin_names(SOURCES_GROUP)


@dataclass(frozen=True)
class SourceRequest:
    """What a source is opened for: the detected board (its root, identity and the rails
    discovered once) and the sampling interval. Fields may be added; an opener reads the
    ones it needs."""

    board: Board
    interval_s: float

    @property
    def root(self) -> Path:
        """The board's root: ``/`` on a Jetson, a virtual board's directory."""
        return Path(self.board.root)


class SourceOpener(Protocol):
    """What a ``pytest_edgeenergy.sources`` entry point names: opens the source for one
    session, or raises :class:`~.source.SourceUnavailable` saying why it cannot work here
    (no device, a missing driver or package)."""

    def __call__(self, request: SourceRequest, /) -> PowerSource: ...


def is_virtual_board(root: Path) -> bool:
    """True when ``root`` holds the marker file written by :mod:`pytest_edgeenergy.sim`."""
    from ..board.identity import VIRTUAL_BOARD_MARKER

    return (root / VIRTUAL_BOARD_MARKER).is_file()


def open_ina(board: Board) -> PowerSource:
    """InaSource over the rails discovered on ``board``; SourceUnavailable if none."""
    from ..board.rails import scanned_dirs
    from .ina import InaSource

    if not board.rails.rails:
        raise SourceUnavailable(
            f"no INA3221/INA238 power rails found under {board.root} "
            f"(scanned {', '.join(scanned_dirs(board.root))})"
        )
    return InaSource(board.rails, simulated=board.identity.simulated)


def open_ina_source(request: SourceRequest) -> PowerSource:
    """``ina`` (entry point): the board's INA3221/INA238 rails."""
    return open_ina(request.board)


def open_tegrastats(request: SourceRequest) -> PowerSource:
    """``tegrastats`` (entry point): a live ``tegrastats`` at the sampling interval."""
    from .tegrastats import TegrastatsSource

    return TegrastatsSource(request.root, interval_s=request.interval_s)


def open_rapl(request: SourceRequest) -> PowerSource:
    """``rapl`` (entry point): powercap ``energy_uj`` counters under the root."""
    from .rapl import RaplSource

    return RaplSource(request.root)


def open_nvml(request: SourceRequest) -> PowerSource:
    """``nvml`` (entry point): NVML's energy counter or power of this machine's GPU."""
    from .nvml import NvmlSource

    return NvmlSource()


def open_jtop(request: SourceRequest) -> PowerSource:
    """``jtop`` (entry point): jetson-stats' service."""
    from .jtop_source import JtopSource

    return JtopSource()


def _open_named(name: str, board: Board, interval_s: float) -> PowerSource:
    opener = load(SOURCES_GROUP, name)
    source = opener(SourceRequest(board, interval_s))
    if not all(callable(getattr(source, m, None)) for m in ("read", "close")):
        raise ExtensionError(
            f"power source {name!r}: its opener returned a {type(source).__name__}, which is "
            "not a PowerSource (see docs/how-to/extensions.md)"
        )
    return cast(PowerSource, source)


def _known_name(name: str) -> str:
    """``name`` as registered (built-in names in any case: ``AUTO``); InvalidValue listing
    the names when none is."""
    key = name.strip() if isinstance(name, str) else name
    builtin = builtin_source_names()
    if isinstance(key, str) and key.lower() in builtin:
        return key.lower()
    if key in source_names():
        return key
    raise InvalidValue(f"power source {name!r}: unknown, allowed: {', '.join(source_names())}")


def open_source(name: str, board: Board, *, interval_s: float) -> PowerSource:
    """Open source ``name`` (``auto`` or a registered one, :func:`source_names`) reading
    ``board`` (as :func:`~pytest_edgeenergy.board.detect.detect` found it: its rails are
    not looked for again).

    Raises ValueError for an unknown name or a bad interval, SourceUnavailable when the
    source cannot work here (the message says why; for ``auto``, why each candidate failed).
    """
    key = _known_name(name)
    if not (isinstance(interval_s, (int, float)) and math.isfinite(interval_s) and interval_s > 0):
        raise InvalidValue(f"interval_s={interval_s!r}: must be a finite number of seconds > 0")
    if key != AUTO:
        return _open_named(key, board, interval_s)

    root = Path(board.root)
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
            return _open_named(candidate, board, interval_s)
        except (SourceUnavailable, ImportError) as exc:
            reasons.append(f"{candidate}: {exc}")
    raise SourceUnavailable(f"no power source found for root {root}: " + "; ".join(reasons))
