"""``edgeenergy tegrastats-energy LOGFILE``: integrate a recorded tegrastats log into energy
per rail and in total (:func:`~pytest_edgeenergy.meters.tegrastats_log.integrate_log`)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..inputfiles import InputFileError, bounded_lines
from ..meters.tegrastats_log import RUNNING_AVERAGE_NOTE, LogEnergy, integrate_log
from ..words import counted


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
