"""``edgeenergy merge REPORT... -o OUT``: the reports of shards run on several boards merged
into one report per device model (:mod:`pytest_edgeenergy.report.merge`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import EdgeEnergyError
from ..report.merge import merge_reports, write_merged
from ..words import counted


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="edgeenergy merge",
        description="Merge the reports of shards run on several boards into one report per "
        "device model (each result keeps its board; a key measured twice is kept and flagged).",
    )
    p.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="report files")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="OUT",
        help="the merged report (a .json file) or, when the reports hold several device "
        "models, a directory that gets DIR/<device>.json per model",
    )
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    return p


def merge_main(argv: Sequence[str] | None = None) -> int:
    """``edgeenergy merge REPORT... -o OUT``: 0 written, 2 bad input (named)."""
    args = _parser().parse_args(argv)
    try:
        merged = merge_reports(args.reports)
        written = write_merged(merged, args.output, overwrite=args.overwrite)
    except (EdgeEnergyError, OSError) as e:
        print(f"edgeenergy: {e}", file=sys.stderr)
        return 2
    for m, path in zip(merged, written, strict=True):
        info = m.report["merged"]
        results = [*m.report["tests"], *info["duplicates"]]
        boards = len({t["board"]["label"] for t in results})
        again = len(info["duplicates"])
        print(
            f"{path}: {counted(len(info['inputs']), 'report')} of {m.slug} on "
            f"{counted(boards, 'board')}, {counted(len(m.report['tests']), 'result')}"
            + (f", {again} measured again (kept and flagged)" if again else "")
        )
    return 0
