"""What one test (or one library window) measured and how it ended: the record the
report writes (:func:`.report.test_entry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..meters.meter import WindowResult


@dataclass
class TestEnergy:
    """The windows one test measured and how it ended."""

    nodeid: str
    windows: list[WindowResult] = field(default_factory=list)
    status: str | None = None
    reason: str | None = None
    duration_s: float | None = None
    operating_point: dict[str, Any] | None = None
    """``{"requested": ..., "read_back": ..., "mismatches": [...], "drift": [...]}``."""
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] | None = None
    """Report metrics set by the benchmark fixture; None: derived from the windows."""
    validity: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
