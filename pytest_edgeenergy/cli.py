"""The ``edgeenergy`` command: virtual boards, board inspection, measuring, logs, reports.

Exit codes: 0 success, 1 a gate failed (``compare --fail``, ``ab``), 2 bad input or a board that
cannot be used (the message names the thing and what is allowed; never a traceback).
Every number has an allowed range (:mod:`.ranges`), checked by argparse.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import EdgeEnergyError
from .extras import missing_extra
from .options_spec import SIM_MODELS, add_arguments
from .ranges import FloatRange
from .run.target import parse_board

if TYPE_CHECKING:
    from .run.target import BoardTarget

MEASURE_SECONDS = FloatRange(0.0, 7200.0, "s", above_low=True)
"""``measure --seconds``: up to what the sampler keeps (``meters.sampler.DEFAULT_RETAIN_S``);
a longer window would be reported invalid after the wait."""


class CliError(EdgeEnergyError):
    """Bad input: printed as ``edgeenergy: <message>`` with exit status 2."""


def _parser() -> argparse.ArgumentParser:
    from .sim.__main__ import RUN_SECONDS, UPDATE_INTERVAL_MS

    p = argparse.ArgumentParser(
        prog="edgeenergy", description="Energy of deep-learning workloads on Jetson boards."
    )
    p.add_argument("--version", action="version", version=f"pytest-edgeenergy {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    b = sub.add_parser("board", help="identity, rails and knobs of a board (or restore it)")
    b.add_argument(
        "action",
        nargs="?",
        choices=("show", "restore"),
        default="show",
        help="show (default) or restore the knobs a killed session changed",
    )
    _board_arguments(b)
    b.add_argument("--json", action="store_true", help="machine-readable output")

    m = sub.add_parser("measure", help="measure energy for S seconds")
    _board_arguments(m)
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

    # Listed for --help; main() hands their arguments to their own parsers.
    sub.add_parser("tegrastats-energy", help="integrate a tegrastats log (see its --help)")
    sub.add_parser("compare", help="compare reports, gate regressions (see its --help)")
    sub.add_parser(
        "ab", help="measure two versions interleaved on one board and gate (see its --help)"
    )
    sub.add_parser("search", help="search a replayed profile table (see its --help)")
    sub.add_parser("history", help="keep every run in a database (see its --help)")
    sub.add_parser("merge", help="merge shard reports of several boards (see its --help)")
    return p


def _board_arguments(parser: argparse.ArgumentParser) -> None:
    """``--board auto|sim:MODEL`` or ``--root DIR``: the words of ``--edge-board`` and
    ``--edge-root``."""
    where = parser.add_mutually_exclusive_group()
    add_arguments(where, ["board", "root"])


def _target(args: argparse.Namespace) -> BoardTarget:
    """The board ``--board``/``--root`` name (root ``/`` when neither is given)."""
    from .run.target import BoardTarget

    if args.board is not None and args.board != "auto":
        return parse_board(args.board, what="--board")
    root = args.root if args.root is not None else Path("/")
    _need_root(root)
    return BoardTarget(root=root)


def _passthrough(command: str, rest: list[str]) -> int:
    """Commands with parsers of their own get their arguments untouched (``--help`` too)."""
    if command == "compare":
        from .report.compare import compare_main

        return compare_main(rest)
    if command == "ab":
        from .ab.main import ab_main

        return ab_main(rest)
    if command == "search":
        from .search.cli import search_main

        return search_main(rest)
    if command == "history":
        from .history.cli import history_main

        return history_main(rest)
    if command == "merge":
        from .report.merge import merge_main

        return merge_main(rest)
    from .meters.tegrastats import tegrastats_energy_main

    return tegrastats_energy_main(rest)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("ab", "compare", "search", "history", "merge", "tegrastats-energy"):
            return _passthrough(argv[0], argv[1:])
        return _dispatch(_parser().parse_args(argv))
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return 0
    except (EdgeEnergyError, OSError) as e:
        print(f"edgeenergy: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        missing = missing_extra(e)
        if missing is None:
            raise
        print(f"edgeenergy: {missing}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "sim":
        return _sim(args)
    if args.command == "board":
        return _restore(args) if args.action == "restore" else _board(args)
    if args.command == "measure":
        return _measure(args)
    raise CliError(f"unknown command {args.command!r}")


def _sim(args: argparse.Namespace) -> int:
    if args.sim_command == "create":
        from .sim.tree import create

        root = create(args.model, args.dir, update_interval_ms=args.update_interval_ms)
        print(f"virtual {args.model} board written to {root}")
        print(f"animate it with: edgeenergy sim run {root}")
        return 0
    from .sim.__main__ import main as sim_main

    if not args.dir.is_dir():
        raise CliError(f"{args.dir}: no such directory (make one with `edgeenergy sim create`)")
    argv = ["run", str(args.dir)]
    if args.seconds is not None:
        argv += ["--seconds", str(args.seconds)]
    return sim_main(argv)


def _need_root(root: Path) -> None:
    if not root.is_dir():
        raise CliError(f"--root {root}: not a directory")


def _board(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from .board.detect import board_json, detect
    from .meters.native import board_sampler
    from .run.target import make_virtual_board

    target = _target(args)
    with ExitStack() as stack:
        root = target.root
        if root is None:
            assert target.sim_model is not None
            root = make_virtual_board(target.sim_model, stack)
        data = board_json(detect(root))
    sampler = board_sampler(bool(data["rails"]))
    data["sampler"], data["sampler_note"] = sampler["kind"], sampler["note"]
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(_board_text(data))
    return 0


def _board_text(data: dict[str, Any]) -> str:
    from .knobs_text import knob_lines

    ident = data["identity"]
    lines = [
        f"model:   {ident.get('model') or 'unknown'}"
        + ("  (SIMULATED virtual board)" if ident.get("simulated") else ""),
        f"soc:     {ident.get('soc') or '-'}   L4T {ident.get('l4t') or '-'}   "
        f"JetPack {ident.get('jetpack') or '-'}",
    ]
    total = data["total"]
    lines.append(
        "total:   "
        + (f"rail {total['rail']}" if total["method"] == "rail" else "sum of all rails")
        + (f"  ({total['note']})" if total.get("note") else "")
    )
    lines.append("rails:")
    for r in data["rails"]:
        where = (
            f"{r.get('chip', '')} {r.get('layout', '')} {r.get('device', '')} ch{r.get('channel')}"
        )
        lines.append(
            f"  {r['name']:<20} {where:<28} {r.get('unit', '')}"
            + ("  (total)" if r["is_total"] else "")
        )
    if data.get("sampler"):
        note = data.get("sampler_note")
        lines.append(f"sampler: {data['sampler']}" + (f"  ({note})" if note else ""))
    modes = data.get("power_modes") or []
    if modes:
        lines.append("power modes: " + ", ".join(f"{m['id']} {m['name']}" for m in modes))
    current = data.get("current_power_mode")
    if current:
        lines.append(f"current power mode: {current['id']} {current['name']}")
    lines.extend(knob_lines(data["knobs"]))
    return "\n".join(lines)


def _restore(args: argparse.Namespace) -> int:
    from .control.state import restore_leftover

    target = _target(args)
    if target.root is None:
        raise CliError(
            f"board restore --board {target.text}: a virtual board made for this command "
            "has nothing to restore; name the board with --root DIR (/ on a Jetson)"
        )
    result = restore_leftover(target.root)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.message)
    return 0 if result.ok else 1


def _measure(args: argparse.Namespace) -> int:
    from .run.session import EnergySession
    from .sim.liveness import frozen_warning, truth_seq

    target = _target(args)
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
        from .plugin.summary import window_text

        print(window_text(result))
        for line in warnings:
            print(f"edgeenergy: warning: {line}", file=sys.stderr)
        if session.report_path is not None:
            print(f"report: {session.report_path}")
    return 0
