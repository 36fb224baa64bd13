"""Grids of operating points for parametrized tests, in an order that changes the board's
state as few times as possible.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .errors import ValueSpecError
from .knobset import KnobSet
from .operating_point import Resolver
from .point import DIMENSIONS, OperatingPoint
from .values import POWER_MODE_ROLES

T = TypeVar("T")

CHANGE_ORDER = ("power_mode", "cpu_cores", "governor", "emc_freq_hz", "cpu_freq_hz", "gpu_freq_hz")
"""Fields from the costliest change (nvpmodel resets clocks) to the cheapest."""

_FIELD = {
    "power_mode": "power_mode",
    "cpu_freq": "cpu_freq_hz",
    "gpu_freq": "gpu_freq_hz",
    "emc_freq": "emc_freq_hz",
    "cpu_cores": "cpu_cores",
    "governor": "governor",
}


def expand(
    options: Mapping[str, Sequence[str]],
    knobs: KnobSet,
    *,
    sources: Mapping[str, str] | None = None,
    force: bool = False,
) -> list[OperatingPoint]:
    """The validated cartesian product of every option's values.

    ``options`` maps ``power_mode``, ``cpu_freq``, ``gpu_freq``, ``emc_freq``,
    ``cpu_cores``, ``governor`` to lists of raw strings (each may itself be a comma list:
    ``["min,612MHz,max"]``). A missing key is not pinned. Every value is checked before a
    single point is returned; duplicates are dropped, order kept.
    """
    unknown = [k for k in options if k not in DIMENSIONS]
    if unknown:
        raise ValueSpecError(
            f"unknown grid option(s) {', '.join(map(repr, unknown))}; allowed: "
            f"{', '.join(DIMENSIONS)}"
        )
    resolver = Resolver(knobs, force=force, sources=sources)
    axes: list[tuple[Any, ...]] = []
    words: dict[tuple[str, Any], str] = {}
    for key in DIMENSIONS:
        texts = options.get(key) or []
        values: list[Any] = []
        for text in texts:
            for value in resolver.dimension(key, text):
                if value not in values:
                    values.append(value)
            for item in text.split(","):
                word = item.strip().lower()
                known = POWER_MODE_ROLES if key == "power_mode" else _WORDS
                if word in known or (word == "all" and key == "cpu_cores"):
                    (value,) = resolver.dimension(key, item)[-1:]
                    words.setdefault((_FIELD[key], value), word)
        axes.append(tuple(values) if values else (None,))
    points: list[OperatingPoint] = []
    for combo in itertools.product(*axes):
        fields = {_FIELD[k]: v for k, v in zip(DIMENSIONS, combo, strict=True)}
        said = tuple((name, words[(name, v)]) for name, v in fields.items() if (name, v) in words)
        point = OperatingPoint(**fields, words=said)
        if point not in points:
            points.append(point)
    return points


_WORDS = frozenset({"min", "max"})
"""Frequency words whose value differs from board to board (and ``--cpu-cores=all``, and
the power-mode roles ``max``, ``min``, ``default``); ``all`` frequencies expand to the
offered values, each then known by its own Hz."""


def _sort_key(value: Any) -> tuple[int, Any]:
    # Unpinned (None) first, then values; mixed types never meet within one field.
    return (0, 0) if value is None else (1, value)


def _serpentine(points: list[OperatingPoint], fields: Sequence[str]) -> list[OperatingPoint]:
    """Reflected (Gray-code) walk: group by the first field; every other group's whole
    inner walk is reversed, so neighbours differ in one field when the grid is full."""
    if not fields or len(points) <= 1:
        return points
    name = fields[0]
    values = sorted({getattr(p, name) for p in points}, key=_sort_key)
    ordered: list[OperatingPoint] = []
    for index, value in enumerate(values):
        inner = _serpentine([p for p in points if getattr(p, name) == value], fields[1:])
        ordered += inner[::-1] if index % 2 else inner
    return ordered


def _identity(item: Any) -> Any:
    return item


def order_for_fewest_changes(
    items: Sequence[T], key: Callable[[T], OperatingPoint] | None = None
) -> list[T]:
    """Reorder ``items`` (points, or anything ``key`` maps to a point) so equal points are
    adjacent and consecutive points differ in as few, and as cheap, knobs as possible.

    Points are grouped by the costliest knob first (power mode, then cores, governor, EMC,
    CPU, GPU) and walked boustrophedon-style (every other group reversed), so a change of
    an outer knob keeps the inner knobs where they are. Items with equal points keep their
    relative order.
    """
    get: Callable[[T], Any] = key if key is not None else _identity
    by_point: dict[OperatingPoint, list[T]] = {}
    for item in items:
        point = get(item)
        if not isinstance(point, OperatingPoint):
            raise TypeError(f"order_for_fewest_changes: {point!r} is not an OperatingPoint")
        by_point.setdefault(point, []).append(item)
    as_given = list(by_point)
    ordered = _serpentine(as_given, CHANGE_ORDER)
    # The walk is a heuristic: on a sparse subset of a grid the given order can be cheaper.
    if count_changes(as_given) < count_changes(ordered):
        ordered = as_given
    return [item for point in ordered for item in by_point[point]]


def count_changes(points: Sequence[OperatingPoint]) -> int:
    """Knob changes needed to walk ``points`` in order (one per differing field)."""
    return sum(
        sum(getattr(a, f) != getattr(b, f) for f in CHANGE_ORDER)
        for a, b in itertools.pairwise(points)
    )
