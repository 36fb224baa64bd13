"""Operating points inside a pytest run: the grid from options, test order, pinning.

The plugin calls these; the work is done by :mod:`.control` (validation, apply, verify,
restore) and :mod:`.session` (one control session per pytest session).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from . import settings as settings_mod
from .words import counted

if TYPE_CHECKING:
    from .control.operating_point import OperatingPoint
    from .session import EnergySession

POINT_DIMENSIONS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")


def points_for(
    config: pytest.Config, es: EnergySession, marker: dict[str, object]
) -> list[OperatingPoint]:
    """The validated operating points for one test function (``[DVFS]`` when none asked).

    Every value is checked against the board before any test runs; a bad one is a usage
    error naming where it came from and what the board offers.
    """
    from .control.errors import ControlError
    from .control.grid import expand
    from .control.operating_point import DVFS

    options: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for dim in POINT_DIMENSIONS:
        v = settings_mod.grid_value(config, dim, marker.get(dim))
        if v is not None:
            options[dim] = [v.text]
            sources[dim] = v.origin
    if not options:
        return [DVFS]
    key = tuple(sorted((k, v[0]) for k, v in options.items()))
    cached = es.grid_cache.get(key)
    if cached is not None:
        return cached
    try:
        es.open()
        assert es.board is not None
        points = expand(options, es.board, sources=sources, force=es.control_settings.force_mode)
    except (ControlError, OSError, ValueError) as e:
        raise pytest.UsageError(str(e)) from None
    es.grid_cache[key] = points
    return points


def validate_options(config: pytest.Config, es: EnergySession) -> bool:
    """Check the grid given by options, env and ini (not markers) before collection, so a
    bad value is one clean usage error. True when any operating-point option was given."""
    try:
        settings_mod.parse_batch_sizes(settings_mod.grid_value(config, "batch_size"))
    except settings_mod.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    if not any(settings_mod.grid_value(config, d) is not None for d in POINT_DIMENSIONS):
        return False
    points_for(config, es, {})
    return True


def _point_of(item: pytest.Item) -> OperatingPoint:
    callspec = getattr(item, "callspec", None)
    point = callspec.params.get("operating_point") if callspec is not None else None
    if point is None:
        from .control.operating_point import DVFS

        return DVFS
    return point  # type: ignore[no-any-return]


def order_and_check(config: pytest.Config, es: EnergySession, items: list[pytest.Item]) -> None:
    """Group tests by operating point (fewest board changes), report the order, and check
    on a real board that every knob file needed is writable, before any test runs."""
    from .control.errors import ControlError
    from .control.grid import count_changes, order_for_fewest_changes

    pinned_items = [i for i in items if "operating_point" in getattr(i, "fixturenames", ())]
    others = [i for i in items if "operating_point" not in getattr(i, "fixturenames", ())]
    ordered = order_for_fewest_changes(pinned_items, key=_point_of)
    items[:] = others + ordered
    walk: list[OperatingPoint] = []
    for item in ordered:
        p = _point_of(item)
        if not walk or walk[-1] != p:
            walk.append(p)
    es.point_order = [p.id for p in walk]
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and walk:
        tr.write_line(
            f"edgeenergy: {counted(len(ordered), 'test')} over "
            f"{counted(len(set(walk)), 'operating point')}, "
            f"{counted(count_changes(walk), 'knob change')}; "
            f"order: {' -> '.join(p.id for p in walk)}"
        )
    if es.control is None:
        return
    try:
        es.control.check_privileges(list(dict.fromkeys(walk)))
    except ControlError as e:
        raise pytest.UsageError(str(e)) from None


@contextmanager
def pinned(
    es: EnergySession, nodeid: str, point: OperatingPoint | None
) -> Iterator[OperatingPoint]:
    """Pin ``point`` for one test, record requested and read-back values, then check drift."""
    from .control.errors import ControlError
    from .control.operating_point import DVFS, check_drift, read_back

    point = point if point is not None else DVFS
    assert es.control is not None
    rec = es.record(nodeid)
    try:
        result = es.apply_point(point)
    except ControlError as e:
        pytest.fail(f"operating point {point.id} could not be applied: {e}", pytrace=False)
    knobs = es.control.knobs
    info: dict[str, Any] = {
        "id": point.id,
        "requested": point.to_json(),
        "read_back": read_back(knobs),
        "verified": result.ok,
        "mismatches": [str(m) for m in result.mismatches],
        "dry_run": result.dry_run,
        "drift": [],
    }
    rec.operating_point = info
    yield point
    info["drift"] = check_drift(point, knobs)
