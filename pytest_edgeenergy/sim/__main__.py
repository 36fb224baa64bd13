"""``python -m pytest_edgeenergy.sim run ROOT [--seconds S] | create MODEL ROOT``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from .models import MODEL_NAMES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_edgeenergy.sim", description="Virtual Jetson boards."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="animate a virtual board until stopped")
    run_p.add_argument("root", type=Path)
    run_p.add_argument("--seconds", type=float, default=None, help="stop after S seconds")
    run_p.add_argument("--seed", type=int, default=None, help="noise seed (reproducible runs)")
    run_p.add_argument(
        "--parent-pid", type=int, default=None, help="stop when this parent process is gone"
    )
    run_p.add_argument(
        "--remove-when-orphaned",
        action="store_true",
        help="with --parent-pid: delete the tree when the parent died (a temporary board)",
    )
    create_p = sub.add_parser("create", help="write a virtual board tree and exit")
    create_p.add_argument("model", help=f"one of: {', '.join(MODEL_NAMES)}")
    create_p.add_argument("root", type=Path)
    create_p.add_argument("--update-interval-ms", type=float, default=5.0)
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
