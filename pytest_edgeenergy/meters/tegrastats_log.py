"""Energy of a recorded tegrastats log (``edgeenergy tegrastats-energy`` prints it).

Time comes from the lines' ``MM-DD-YYYY HH:MM:SS`` stamps when every used line carries one
and they strictly increase; stamps have 1 s resolution, so when lines share a second (or
carry none) the caller's interval is used instead. Power is each line's *current* value,
integrated with the trapezoid rule; tegrastats' second number (a running average since it
started) is never used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..board.types import TotalMethod
from .tegrastats_parse import parse_line, total_rail_of

TimeSource = Literal["timestamps", "interval"]

RUNNING_AVERAGE_NOTE = (
    "tegrastats' second number per rail is a running average since tegrastats started; "
    "it is not used: energy integrates the current values (trapezoid rule)"
)
SAMPLER_CPU_NOTE = "sampler_cpu_s is null: a log replay runs no sampler"


@dataclass(frozen=True)
class ChannelEnergy:
    """Energy and mean power of one rail (or the total); None when the log is invalid."""

    energy_j: float | None
    mean_w: float | None


@dataclass(frozen=True)
class LogEnergy:
    """Result of integrating a tegrastats log; :meth:`to_json` is the CLI's JSON contract."""

    seconds: float
    interval_ms: float | None
    samples: int
    valid: bool
    invalid_reason: str | None
    read_errors: int
    """Non-blank, non-comment lines skipped: no power fields, or a rail of the first
    power line missing."""
    rails: dict[str, ChannelEnergy]
    total: ChannelEnergy
    total_method: TotalMethod
    total_rail: str | None
    time_source: TimeSource | None
    sampler_cpu_s: float | None = None
    notes: tuple[str, ...] = field(default=(RUNNING_AVERAGE_NOTE, SAMPLER_CPU_NOTE))

    def to_json(self) -> dict[str, Any]:
        """The ``tegrastats-energy --json`` / ``measure --json`` shape (plus a few extra keys)."""
        return {
            "seconds": self.seconds,
            "interval_ms": self.interval_ms,
            "samples": self.samples,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            # Same shape as ``measure --json``: failed readings counted by reason.
            "read_errors": {"unusable_line": self.read_errors} if self.read_errors else {},
            "sampler_cpu_s": self.sampler_cpu_s,
            "rails": {
                name: {"energy_j": e.energy_j, "mean_w": e.mean_w} for name, e in self.rails.items()
            },
            "total": {
                "energy_j": self.total.energy_j,
                "mean_w": self.total.mean_w,
                "method": self.total_method,
                "rail": self.total_rail,
            },
            "time_source": self.time_source,
            "notes": list(self.notes),
        }


def _trapezoid_j(times_s: Sequence[float], power_w: Sequence[float]) -> float:
    energy = 0.0
    for k in range(1, len(times_s)):
        energy += (times_s[k] - times_s[k - 1]) * (power_w[k] + power_w[k - 1])
    return 0.5 * energy


def _strictly_increasing(stamps: Sequence[datetime | None]) -> bool:
    prev: datetime | None = None
    for ts in stamps:
        if ts is None or (prev is not None and ts <= prev):
            return False
        prev = ts
    return True


def integrate_log(lines: Iterable[str], *, interval_s: float | None) -> LogEnergy:
    """Integrate the rails of a tegrastats log into energy per rail and in total.

    ``interval_s`` is tegrastats' ``--interval`` in seconds; it is needed when the lines
    carry no timestamps or several share one second. Blank lines and ``#`` comments are
    skipped; any other line occupies one sampling slot even when it cannot be used, so a
    garbled line widens the trapezoid between its neighbours instead of shifting time.

    Raises ValueError when timing is needed and neither source of time is available, or
    when ``interval_s`` is not a positive finite number.
    """
    if interval_s is not None and not (math.isfinite(interval_s) and interval_s > 0):
        raise ValueError(f"interval_s={interval_s!r}: must be a positive number of seconds")
    channels: tuple[str, ...] | None = None
    slots: list[int] = []
    stamps: list[datetime | None] = []
    values: list[list[float]] = []
    read_errors = 0
    slot = -1
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        slot += 1
        sample = parse_line(line)
        if not sample.has_power:
            read_errors += 1
            continue
        if channels is None:
            channels = tuple(sample.rails_w)
        if any(c not in sample.rails_w for c in channels):
            read_errors += 1
            continue
        slots.append(slot)
        stamps.append(sample.timestamp)
        values.append([sample.rails_w[c] for c in channels])

    names = channels or ()
    total_rail = total_rail_of(names)
    total_method: TotalMethod = "rail" if total_rail is not None else "sum"
    n = len(values)
    if n < 2:
        return LogEnergy(
            seconds=0.0,
            interval_ms=interval_s * 1e3 if interval_s is not None else None,
            samples=n,
            valid=False,
            invalid_reason=f"fewer than 2 samples with power fields (got {n})",
            read_errors=read_errors,
            rails={c: ChannelEnergy(None, None) for c in names},
            total=ChannelEnergy(None, None),
            total_method=total_method,
            total_rail=total_rail,
            time_source=None,
        )

    time_source: TimeSource
    if _strictly_increasing(stamps):
        first = stamps[0]
        assert first is not None
        times_s = [(ts - first).total_seconds() for ts in stamps if ts is not None]
        time_source = "timestamps"
    elif interval_s is not None:
        times_s = [(s - slots[0]) * interval_s for s in slots]
        time_source = "interval"
    else:
        raise ValueError(
            "tegrastats log: the lines carry no timestamps, or several share one second "
            "(timestamps have 1 s resolution); give the tegrastats interval "
            "(--interval-ms MS) to integrate it"
        )

    seconds = times_s[-1] - times_s[0]
    interval_ms = seconds * 1e3 / (slots[-1] - slots[0])
    rails: dict[str, ChannelEnergy] = {}
    for i, name in enumerate(names):
        energy_j = _trapezoid_j(times_s, [row[i] for row in values])
        rails[name] = ChannelEnergy(energy_j, energy_j / seconds)
    if total_rail is not None:
        total_j = rails[total_rail].energy_j
    else:
        total_j = _trapezoid_j(times_s, [sum(row) for row in values])
    assert total_j is not None
    return LogEnergy(
        seconds=seconds,
        interval_ms=interval_ms,
        samples=n,
        valid=True,
        invalid_reason=None,
        read_errors=read_errors,
        rails=rails,
        total=ChannelEnergy(total_j, total_j / seconds),
        total_method=total_method,
        total_rail=total_rail,
        time_source=time_source,
    )
