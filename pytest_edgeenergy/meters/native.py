"""Which sampler reads a source: the native reader thread or the Python thread.

``native``: the C extension :mod:`._preadring` (built at install when a compiler and the
Python headers exist) preads the files of a :class:`~.source.PreadSource` in a thread of its
own that never takes the GIL; Python only drains and decodes its readings. ``python``: the
sampler's Python thread reads (every other source, or where the extension is not built).

The environment variable ``EDGEENERGY_SAMPLER`` forces a kind (``python`` or ``native``;
empty or ``auto`` chooses); forcing ``native`` where it cannot run is an error naming why.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Literal

from ..errors import EdgeEnergyError
from .source import PowerSource, PreadSource

SamplerKind = Literal["native", "python"]
ENV_VAR = "EDGEENERGY_SAMPLER"
KINDS = ("auto", "native", "python")


class SamplerUnavailable(EdgeEnergyError):
    """The sampler kind forced by ``EDGEENERGY_SAMPLER`` cannot read this source."""


def load_extension() -> tuple[ModuleType | None, str | None]:
    """The native reader module, or None and why it is missing."""
    try:
        from . import _preadring
    except ImportError:
        return None, (
            "the native reader (pytest_edgeenergy.meters._preadring) was not built at "
            "install: reinstall with a C compiler and the Python headers (python3-dev)"
        )
    module: ModuleType = _preadring
    return module, None


def requested_kind() -> str:
    """``EDGEENERGY_SAMPLER`` normalised: ``auto``, ``native`` or ``python``."""
    value = os.environ.get(ENV_VAR, "").strip().lower() or "auto"
    if value not in KINDS:
        raise SamplerUnavailable(
            f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a sampler kind; use one of "
            f"{', '.join(KINDS)}"
        )
    return value


def _native_obstacle(source: PowerSource | None) -> str | None:
    """Why the native reader cannot read ``source`` (None: it can)."""
    _, missing = load_extension()
    if missing is not None:
        return missing
    if source is None:
        return None
    if not isinstance(source, PreadSource):
        return f"source {source.name} is not read by pread of open files"
    if source.pread_plan().pread is not os.pread:
        return f"source {source.name} reads through its own pread function, not os.pread"
    return None


def choose_kind(source: PowerSource | None) -> tuple[SamplerKind, str | None]:
    """The kind that will read ``source`` (None: an INA source), and why not native.

    Raises :class:`SamplerUnavailable` when ``EDGEENERGY_SAMPLER=native`` cannot be met.
    """
    requested = requested_kind()
    if requested == "python":
        return "python", f"{ENV_VAR}=python"
    obstacle = _native_obstacle(source)
    if obstacle is None:
        return "native", None
    if requested == "native":
        raise SamplerUnavailable(f"{ENV_VAR}=native, but {obstacle}")
    return "python", obstacle


def board_sampler(has_ina_rails: bool) -> dict[str, str | None]:
    """What ``edgeenergy board`` says about the sampler: ``kind`` (``native``, ``python``, or
    ``unavailable`` when ``EDGEENERGY_SAMPLER=native`` cannot be met) and ``note`` (why not
    native; None when native)."""
    if not has_ina_rails:
        return {"kind": "python", "note": "no INA rails: other sources use the Python thread"}
    try:
        kind, why = choose_kind(None)
    except SamplerUnavailable as exc:
        return {"kind": "unavailable", "note": str(exc)}
    return {"kind": kind, "note": why}
