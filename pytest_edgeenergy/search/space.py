"""The search space: ordered dimensions (knobs) and the values each may take."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import InvalidValue

KnobValue = int | str
"""A knob's value: Hz or a count (int), or a power mode's name (str)."""

Knobs = dict[str, KnobValue]
"""One point: knob name to value."""

KNOB_NAMES = ("power_mode", "cpu_cores", "cpu_freq_hz", "gpu_freq_hz", "emc_freq_hz", "batch_size")
"""Knobs a search may vary, named as the operating point and report fields are."""

CATEGORICAL = frozenset({"power_mode"})
"""Knobs whose values have no order (every other one is a number, searched in order)."""


@dataclass(frozen=True)
class Dimension:
    """One knob and its allowed values (ascending for numbers)."""

    name: str
    values: tuple[KnobValue, ...]

    def __post_init__(self) -> None:
        if self.name not in KNOB_NAMES:
            raise InvalidValue(f"unknown knob {self.name!r}; allowed: {', '.join(KNOB_NAMES)}")
        if not self.values:
            raise InvalidValue(f"knob {self.name!r} has no values")
        if len(set(self.values)) != len(self.values):
            raise InvalidValue(f"knob {self.name!r} lists a value twice: {self.values}")

    @property
    def ordered(self) -> bool:
        return self.name not in CATEGORICAL

    def index(self, value: KnobValue) -> int:
        try:
            return self.values.index(value)
        except ValueError:
            raise InvalidValue(
                f"{self.name}={value!r} is not in the search space; allowed: "
                f"{', '.join(map(str, self.values))}"
            ) from None


Point = tuple[KnobValue, ...]
"""A point as the tuple of its values in the space's dimension order."""


@dataclass(frozen=True)
class Space:
    """Ordered dimensions; ``points`` restricts the space to some combinations (a replay
    table that lacks a few), None meaning the full cartesian product."""

    dims: tuple[Dimension, ...]
    points: frozenset[Point] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.dims:
            raise InvalidValue("the search space has no dimension")
        names = [d.name for d in self.dims]
        if len(set(names)) != len(names):
            raise InvalidValue(f"a knob appears twice in the search space: {names}")

    @classmethod
    def from_values(cls, values: Mapping[str, Iterable[KnobValue]]) -> Space:
        """A full product space; knobs in :data:`KNOB_NAMES` order, numbers sorted."""
        dims = []
        for name in KNOB_NAMES:
            if name in values:
                vals = list(dict.fromkeys(values[name]))
                if name not in CATEGORICAL:
                    vals.sort()
                dims.append(Dimension(name, tuple(vals)))
        unknown = sorted(set(values) - set(KNOB_NAMES))
        if unknown:
            raise InvalidValue(f"unknown knob(s) {unknown}; allowed: {', '.join(KNOB_NAMES)}")
        return cls(tuple(dims))

    @classmethod
    def from_points(cls, points: Sequence[Mapping[str, KnobValue]]) -> Space:
        """The space of exactly these points (values: the distinct ones of each knob)."""
        if not points:
            raise InvalidValue("no point to build a search space from")
        names = set(points[0])
        values: dict[str, list[KnobValue]] = {n: [] for n in names}
        for p in points:
            if set(p) != names:
                raise InvalidValue(f"points name different knobs: {sorted(names)} vs {sorted(p)}")
            for n in names:
                values[n].append(p[n])
        space = cls.from_values(values)
        return cls(space.dims, frozenset(space.point(p) for p in points))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def point(self, knobs: Mapping[str, KnobValue]) -> Point:
        """The tuple of ``knobs`` (every dimension named, each value allowed)."""
        missing = [n for n in self.names if n not in knobs]
        extra = [n for n in knobs if n not in self.names]
        if missing or extra:
            raise InvalidValue(
                f"point {dict(knobs)} does not match the search space's knobs "
                f"{', '.join(self.names)}"
            )
        for d in self.dims:
            d.index(knobs[d.name])
        return tuple(knobs[n] for n in self.names)

    def knobs(self, point: Point) -> Knobs:
        return dict(zip(self.names, point, strict=True))

    def all_points(self) -> list[Point]:
        """Every allowed point in product order (first dimension slowest)."""
        product = itertools.product(*(d.values for d in self.dims))
        if self.points is None:
            return list(product)
        return [p for p in product if p in self.points]

    def contains(self, point: Point) -> bool:
        if len(point) != len(self.dims):
            return False
        if not all(v in d.values for v, d in zip(point, self.dims, strict=True)):
            return False
        return self.points is None or point in self.points

    def size(self) -> int:
        if self.points is not None:
            return len(self.points)
        n = 1
        for d in self.dims:
            n *= len(d.values)
        return n

    def indices(self, point: Point) -> tuple[int, ...]:
        return tuple(d.index(v) for d, v in zip(self.dims, point, strict=True))

    def at(self, indices: Sequence[int]) -> Point:
        return tuple(d.values[i] for d, i in zip(self.dims, indices, strict=True))
