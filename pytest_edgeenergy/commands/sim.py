"""``edgeenergy sim create MODEL DIR | run DIR``: virtual boards; and the virtual board's own
process, ``python -m pytest_edgeenergy.sim run ROOT [--seconds S] | create MODEL ROOT``
(:class:`~pytest_edgeenergy.sim.runner.SimProcess` starts it; ``sim/__main__.py`` calls
:func:`process_main`)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from ..ranges import FloatRange, IntRange
from ..sim.models import MODEL_NAMES
from .common import CliError

RUN_SECONDS = FloatRange(0.0, 86400.0, "s", above_low=True)
"""``run --seconds``: up to a day; without it the board runs until stopped."""
UPDATE_INTERVAL_MS = FloatRange(1.0, 1000.0, "ms")
"""``create --update-interval-ms``: hwmon's ``update_interval`` is whole ms, >= 1."""
SEED = IntRange(0, 2**32 - 1)
PID = IntRange(1, 2**22)
"""Linux's largest ``pid_max`` (``PID_MAX_LIMIT`` on 64-bit)."""


# -- edgeenergy sim --------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """``edgeenergy sim``'s subcommands, on the command's subparsers ``sub``."""
    from ..options_spec import SIM_MODELS

    sim = sub.add_parser("sim", help="virtual boards").add_subparsers(dest="sim_command")
    sim.required = True
    c = sim.add_parser("create", help="write a virtual board tree into DIR and exit")
    c.add_argument("model", choices=SIM_MODELS, metavar="MODEL", help=", ".join(SIM_MODELS))
    c.add_argument("dir", type=Path, metavar="DIR")
    c.add_argument(
        "--update-interval-ms",
        type=UPDATE_INTERVAL_MS,
        default=5.0,
        metavar="MS",
        help="how often the virtual power monitors update (default 5 ms); "
        f"{UPDATE_INTERVAL_MS.describe()}",
    )
    r = sim.add_parser("run", help="animate a virtual board (power model) until stopped")
    r.add_argument("dir", type=Path, metavar="DIR")
    r.add_argument(
        "--seconds",
        type=RUN_SECONDS,
        default=None,
        metavar="S",
        help=f"stop after S seconds (default: until stopped); {RUN_SECONDS.describe()}",
    )


def run(args: argparse.Namespace) -> int:
    if args.sim_command == "create":
        from ..sim.tree import create

        root = create(args.model, args.dir, update_interval_ms=args.update_interval_ms)
        print(f"virtual {args.model} board written to {root}")
        print(f"animate it with: edgeenergy sim run {root}")
        return 0
    if not args.dir.is_dir():
        raise CliError(f"{args.dir}: no such directory (make one with `edgeenergy sim create`)")
    argv = ["run", str(args.dir)]
    if args.seconds is not None:
        argv += ["--seconds", str(args.seconds)]
    return process_main(argv)


# -- python -m pytest_edgeenergy.sim ---------------------------------------------------------


def _process_parser() -> argparse.ArgumentParser:
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


def process_main(argv: list[str] | None = None) -> int:
    """The virtual board's process (``python -m pytest_edgeenergy.sim``); returns the exit
    status (2 on bad input)."""
    args = _process_parser().parse_args(argv)
    from ..sim.runner import NotAVirtualBoard, SimAlreadyRunning
    from ..sim.runner import run as run_board
    from ..sim.tree import TreeNotEmpty, create

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
        run_board(
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
