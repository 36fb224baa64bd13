"""Energy figures for pytest-benchmark's ``benchmark.extra_info``, and its fixture's state.

The energy figures of a test go into ``benchmark.extra_info`` as flat keys with the unit in
the name (``energy_j``, ``power_mean_w``, ``energy_per_item_j``, ``energy_j.VDD_IN``), made
from the metrics of the test's report entry: :func:`flat_figures`. pytest-benchmark keeps
that same dict in its stats and serialises it at session end (``--benchmark-json``,
``--benchmark-save``), so filling it at the test's teardown
(:func:`pytest_edgeenergy.plugin.benchmark_bridge.fill_at_teardown`) reaches its JSON.
Nothing here imports pytest-benchmark: the fixture object is duck-typed.

``edge_bench.run`` drives a ``benchmark`` the test has not used yet through
``benchmark.pedantic`` (see :mod:`.repeats`), so the test has pytest-benchmark stats of the
very calls its energy windows measured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..report.model import METRIC_UNITS

if TYPE_CHECKING:
    from ..report.model import Metric, Validity

__all__ = [
    "UNIT_SUFFIXES",
    "fill",
    "flat_figures",
    "flat_key",
    "unused",
]

UNIT_SUFFIXES: dict[str, str] = {
    "J": "_j",
    "J/item": "_j",
    "W": "_w",
    "s": "_s",
    "items/s": "_items_s",
    "J·s": "_js",
    "B": "_bytes",
}
"""The suffix a metric's unit adds to its ``extra_info`` key; other units are slugged."""


def _suffix(unit: str) -> str:
    if unit in UNIT_SUFFIXES:
        return UNIT_SUFFIXES[unit]
    slug = re.sub(r"[^0-9a-z]+", "_", unit.lower()).strip("_")
    return f"_{slug}" if slug else ""


def flat_key(name: str, unit: str) -> str:
    """``name`` with its unit as a suffix, unless it already says it: ``latency_p90`` (s) is
    ``latency_p90_s``; ``energy_j``, ``load.duration_s`` and per-rail ``energy_j.VDD_IN``
    stay as they are."""
    suffix = _suffix(unit)
    parts = name.split(".")
    if not suffix or parts[-1].endswith(suffix):
        return name
    # A per-rail name carries the unit in its metric part: energy_j.VDD_IN.
    if any(p in METRIC_UNITS and p.endswith(suffix) for p in parts[:-1]):
        return name
    return name + suffix


def flat_figures(
    metrics: Mapping[str, Metric], validity: Validity | None, *, simulated: bool
) -> dict[str, Any]:
    """Each metric's headline value under :func:`flat_key` (null when untrusted), plus
    ``energy_valid``, ``energy_invalid_reason`` and ``energy_simulated``."""
    out: dict[str, Any] = {flat_key(name, m["unit"]): m["value"] for name, m in metrics.items()}
    out["energy_valid"] = validity["valid"] if validity is not None else None
    out["energy_invalid_reason"] = validity["reason"] if validity is not None else None
    out["energy_simulated"] = simulated
    return out


def unused(benchmark: object) -> bool:
    """True while neither ``benchmark(...)`` nor ``benchmark.pedantic(...)`` has run.

    Reads pytest-benchmark's undocumented ``_mode`` (None until the fixture is used; its own
    "not used" warning and "can only be used once" error read it). Where it is missing
    (another version, another plugin's ``benchmark``) the fixture counts as used, so
    ``edge_bench`` never drives it.
    """
    return getattr(benchmark, "_mode", "unknown") is None


def fill(benchmark: object, info: Mapping[str, Any]) -> None:
    """Put ``info`` into ``benchmark.extra_info`` in place (pytest-benchmark's stats hold
    that very dict); a fixture without a dict ``extra_info`` is left alone."""
    extra = getattr(benchmark, "extra_info", None)
    if isinstance(extra, dict):
        extra.update(info)
