"""``python -m pytest_edgeenergy.sim run ROOT [--seconds S] | create MODEL ROOT``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from ..ranges import FloatRange, IntRange
from .models import MODEL_NAMES

RUN_SECONDS = FloatRange(0.0, 86400.0, "s", above_low=True)
"""``run --seconds``: up to a day; without it the board runs until stopped."""
UPDATE_INTERVAL_MS = FloatRange(1.0, 1000.0, "ms")
"""``create --update-interval-ms``: hwmon's ``update_interval`` is whole ms, >= 1."""
SEED = IntRange(0, 2**32 - 1)
PID = IntRange(1, 2**22)
"""Linux's largest ``pid_max`` (``PID_MAX_LIMIT`` on 64-bit)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_edgeenergy.sim", description="Virtual Jetson boards."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="animate a virtual board until stopped")
    run_p.add_argument("root", type=Path)
    run_p.add_argument(
        "--seconds",
        type=RUN_SECONDS,
        default=None,
        help=f"stop after S seconds (default: until stopped); {RUN_SECONDS.describe()}",
    )
    run_p.add_argument(
        "--seed",
        type=SEED,
        default=None,
        help=f"noise seed (reproducible runs); {SEED.describe()}",
    )
    run_p.add_argument(
        "--parent-pid", type=PID, default=None, help="stop when this parent process is gone"
    )
    run_p.add_argument(
        "--remove-when-orphaned",
        action="store_true",
        help="with --parent-pid: delete the tree when the parent died (a temporary board)",
    )
    create_p = sub.add_parser("create", help="write a virtual board tree and exit")
    create_p.add_argument("model", help=f"one of: {', '.join(MODEL_NAMES)}")
    create_p.add_argument("root", type=Path)
    create_p.add_argument(
        "--update-interval-ms",
        type=UPDATE_INTERVAL_MS,
        default=5.0,
        help=f"default 5; {UPDATE_INTERVAL_MS.describe()}",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 on bad input)."""
    args = _parser().parse_args(argv)
    from .runner import NotAVirtualBoard, SimAlreadyRunning, run
    from .tree import TreeNotEmpty, create

    try:
        if args.command == "create":
            create(args.model, args.root, update_interval_ms=args.update_interval_ms)
            print(args.root)
            return 0
        stop = threading.Event()

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        run(
            args.root,
            stop=stop,
            duration_s=args.seconds,
            seed=args.seed,
            parent_pid=args.parent_pid,
            remove_when_orphaned=args.remove_when_orphaned,
        )
        return 0
    except (ValueError, NotAVirtualBoard, SimAlreadyRunning, TreeNotEmpty) as exc:
        print(f"edgeenergy sim: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
