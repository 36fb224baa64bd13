"""Operating points inside a pytest run: the grid asked for and the test order.

Functions of what they are given (the config, the run layer's session, a control session,
the items); the plugin's session (:class:`.session.PluginSession`) keeps what they return.
The work is done by :mod:`pytest_edgeenergy.run` and :mod:`pytest_edgeenergy.control`
(validation, apply, verify, restore); errors become usage errors here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..words import counted
from . import options
from .options import POINT_DIMENSIONS

if TYPE_CHECKING:
    from ..control.operating_point import OperatingPoint
    from ..control.state import Session as ControlSession
    from ..run.session import EnergySession

GridRequest = tuple[dict[str, list[str]], dict[str, str]]
"""The values asked for per dimension, and where each came from."""


def grid_request(config: pytest.Config, marker: dict[str, object]) -> GridRequest:
    """The operating-point dimensions asked for by options, env, ini or the test's
    ``edge_grid`` marker (in that precedence); empty when none."""
    values: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for dim in POINT_DIMENSIONS:
        v = options.grid_value(config, dim, marker.get(dim))
        if v is not None:
            values[dim] = [v.text]
            sources[dim] = v.origin
    return values, sources


def expand_points(request: GridRequest, session: EnergySession) -> list[OperatingPoint]:
    """The validated operating points of ``request`` on ``session``'s board; a bad value is
    a usage error naming where it came from and what the board offers."""
    from ..run.errors import PointError

    values, sources = request
    try:
        return session.points(values, sources)
    except PointError as e:
        raise pytest.UsageError(str(e)) from None


def point_of(item: pytest.Item) -> OperatingPoint:
    """The operating point a collected test runs at (``dvfs`` when none)."""
    callspec = getattr(item, "callspec", None)
    point = callspec.params.get("operating_point") if callspec is not None else None
    if point is None:
        from ..control.operating_point import DVFS

        return DVFS
    return point  # type: ignore[no-any-return]


def order_items(items: list[pytest.Item]) -> tuple[int, list[OperatingPoint]]:
    """Group the tests using ``operating_point`` by point, fewest board changes first
    (in place, after the other tests); returns how many were ordered and the points in
    run order."""
    from ..control.grid import order_for_fewest_changes

    pinned_items = [i for i in items if "operating_point" in getattr(i, "fixturenames", ())]
    others = [i for i in items if "operating_point" not in getattr(i, "fixturenames", ())]
    ordered = order_for_fewest_changes(pinned_items, key=point_of)
    items[:] = others + ordered
    walk: list[OperatingPoint] = []
    for item in ordered:
        p = point_of(item)
        if not walk or walk[-1] != p:
            walk.append(p)
    return len(ordered), walk


def order_line(test_count: int, walk: list[OperatingPoint], selected: int | None = None) -> str:
    """``edgeenergy: 4 tests over 2 operating points, 1 knob change; order: a -> b``;
    ``edgeenergy: 194 of 196 selected tests over ...`` when ``selected`` (the tests pytest
    will run, after ``-k``/``-m``/``--workload`` deselection) counts tests that pin
    nothing (they run first)."""
    from ..control.grid import count_changes

    tests = counted(test_count, "test")
    if selected is not None and selected != test_count:
        tests = f"{test_count} of {counted(selected, 'selected test')}"
    return (
        f"edgeenergy: {tests} over "
        f"{counted(len(set(walk)), 'operating point')}, "
        f"{counted(count_changes(walk), 'knob change')}; "
        f"order: {' -> '.join(p.id for p in walk)}"
    )


def check_privileges(control: ControlSession, walk: list[OperatingPoint]) -> None:
    """On a real board, check that every knob file the points need is writable, before
    any test runs (a usage error naming the files otherwise)."""
    from ..control.errors import ControlError

    try:
        control.check_privileges(list(dict.fromkeys(walk)))
    except ControlError as e:
        raise pytest.UsageError(str(e)) from None
