"""Energy of a recorded tegrastats log, and the ``edgeenergy tegrastats-energy`` command.

Time comes from the lines' ``MM-DD-YYYY HH:MM:SS`` stamps when every used line carries one
and they strictly increase; stamps have 1 s resolution, so when lines share a second (or
carry none) the caller's interval is used instead. Power is each line's *current* value,
integrated with the trapezoid rule; tegrastats' second number (a running average since it
started) is never used.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from ..board.types import TotalMethod
from ..inputfiles import InputFileError, bounded_lines
from ..words import counted
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


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(result: LogEnergy, source: str) -> str:
    """A short human-readable summary of ``result``."""
    lines = [f"tegrastats log: {source}"]
    if result.valid:
        lines.append(
            f"{counted(result.samples, 'sample')} over {result.seconds:.3f} s "
            f"(interval {_fmt(result.interval_ms, 0)} ms, from {result.time_source}), "
            f"{counted(result.read_errors, 'unusable line')}"
        )
    else:
        lines.append(
            f"INVALID: {result.invalid_reason} ({counted(result.read_errors, 'unusable line')})"
        )
    width = max([len("total"), *(len(n) for n in result.rails)])
    lines.append(f"{'rail':<{width}}  {'energy_j':>12}  {'mean_w':>9}")
    for name, e in result.rails.items():
        lines.append(f"{name:<{width}}  {_fmt(e.energy_j, 3):>12}  {_fmt(e.mean_w, 3):>9}")
    how = f"rail {result.total_rail}" if result.total_rail else "sum of rails"
    lines.append(
        f"{'total':<{width}}  {_fmt(result.total.energy_j, 3):>12}  "
        f"{_fmt(result.total.mean_w, 3):>9}  ({how})"
    )
    lines.append(f"note: {RUNNING_AVERAGE_NOTE}")
    return "\n".join(lines)


MAX_LINE_BYTES = 64 * 1024
"""The longest line of a log read (tegrastats writes a few hundred bytes a line): a file
without line ends is refused at this size rather than held whole."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeenergy tegrastats-energy",
        description="Integrate a tegrastats log into energy per rail and in total.",
    )
    parser.add_argument("logfile", metavar="LOGFILE", help="tegrastats output, one line per sample")
    parser.add_argument(
        "--interval-ms",
        type=float,
        default=None,
        metavar="MS",
        help="tegrastats --interval used for the log (needed when lines lack timestamps)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    return parser


def tegrastats_energy_main(argv: list[str]) -> int:
    """``edgeenergy tegrastats-energy``: 0 valid, 2 bad input (an unreadable or unusable log:
    the result is still printed, the reason goes to stderr)."""
    prog = "edgeenergy tegrastats-energy"
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage and the error
        return exc.code if isinstance(exc.code, int) else 2
    interval_ms: float | None = args.interval_ms
    if interval_ms is not None and not (math.isfinite(interval_ms) and interval_ms > 0):
        print(f"{prog}: --interval-ms {interval_ms:g}: must be a positive number", file=sys.stderr)
        return 2
    path = Path(args.logfile)
    try:
        result = integrate_log(
            bounded_lines(path, MAX_LINE_BYTES, "a tegrastats log file"),
            interval_s=interval_ms / 1e3 if interval_ms is not None else None,
        )
    except InputFileError as exc:
        print(f"{prog}: LOGFILE {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"{prog}: {path}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_table(result, str(path)))
    if result.valid:
        return 0
    print(
        f"{prog}: {path}: not a usable tegrastats log: {result.invalid_reason}, "
        f"{counted(result.read_errors, 'unusable line')}; expected "
        "tegrastats output lines with rail fields such as 'VDD_IN 4654mW/4654mW'",
        file=sys.stderr,
    )
    return 2
