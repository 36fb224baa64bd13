"""What the report records of a pinned operating point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..control.knobset import KnobSet
    from ..control.operating_point import ApplyResult, OperatingPoint

__all__ = ["pinned_info"]


def pinned_info(point: OperatingPoint, result: ApplyResult, knobs: KnobSet) -> dict[str, Any]:
    """What the report records of a pinned point: requested and read-back values, whether
    it verified (drift is filled in after the test or window)."""
    from ..control.operating_point import read_back

    return {
        "id": point.id,
        "requested": point.to_json(),
        "read_back": read_back(knobs),
        "verified": result.ok,
        "mismatches": [str(m) for m in result.mismatches],
        "dry_run": result.dry_run,
        "drift": [],
    }
