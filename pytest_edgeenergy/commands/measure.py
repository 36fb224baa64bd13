"""``edgeenergy measure``: the energy of S seconds on a board, beside whatever drives it (a
measure-only :class:`~pytest_edgeenergy.run.EnergySession`: no lock)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ..ranges import FloatRange
from .common import board_arguments
from .common import target as board_target

MEASURE_SECONDS = FloatRange(0.0, 7200.0, "s", above_low=True)
"""``measure --seconds``: up to what the sampler keeps (``meters.sampler.DEFAULT_RETAIN_S``);
a longer window would be reported invalid after the wait."""


def add_parser(sub: Any) -> None:
    """``edgeenergy measure``, on the command's subparsers ``sub``."""
    from ..options_spec import add_arguments

    m = sub.add_parser("measure", help="measure energy for S seconds")
    board_arguments(m)
    m.add_argument(
        "--seconds",
        type=MEASURE_SECONDS,
        required=True,
        metavar="S",
        help=f"how long to measure; {MEASURE_SECONDS.describe()}",
    )
    add_arguments(
        m,
        ["interval_ms", "source", "sim_load", "report", "report_overwrite"],
        helps={
            "report": "also write the window as a JSON report to PATH (default: no report)",
            "report_overwrite": "allow --report to replace an existing file",
        },
    )
    m.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from ..run.session import EnergySession
    from ..sim.liveness import frozen_warning, truth_seq

    target = board_target(args)
    board = target.root if target.root is not None else target.text
    session = EnergySession(
        board,
        report=args.report if args.report is not None else False,
        lock=False,  # measures only, beside whatever drives the board
        source=args.source,
        interval_s=args.interval_ms / 1000.0,
        idle_s=0,
        sim_load=args.sim_load,
        board_hint="measure a virtual board with --board sim:MODEL (e.g. sim:orin-nano)",
        announce=False,  # the output says SIMULATED itself
        report_overwrite=args.report_overwrite,
        overwrite_hint="pass --report-overwrite",
    )
    with session:
        assert session.root is not None
        seq_before = truth_seq(session.root)
        with session.window("measure") as w:
            time.sleep(args.seconds)
        result = w.result
        # A virtual board made for this command is animated by it; one under --root may not be.
        frozen = (
            frozen_warning(session.root, seq_before)
            if result.simulated and target.root is not None
            else None
        )
    warnings = [frozen] if frozen else []
    data = {**result.to_json(), "warnings": warnings}
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        from ..present.summary import window_text

        print(window_text(result))
        for line in warnings:
            print(f"edgeenergy: warning: {line}", file=sys.stderr)
        if session.report_path is not None:
            print(f"report: {session.report_path}")
    return 0
