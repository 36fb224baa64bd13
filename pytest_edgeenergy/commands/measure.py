"""``edgeenergy measure``: the energy of S seconds on a board, beside whatever drives it (a
measure-only :class:`~pytest_edgeenergy.run.EnergySession`: no lock), or of a command:
``edgeenergy measure [options] -- CMD ARGS...`` (:func:`command_main`; the engine is
:mod:`pytest_edgeenergy.run.command`).

The command's own output passes through (or goes into ``--output FILE``), so everything
said about a command goes to stderr, as ``time`` does. Exit status of the command form: 0
every run (and warm-up) exited 0, 1 one of them did not, 2 bad input or a board that cannot
be used, 130 (Ctrl-C) or 143 (SIGTERM) when stopped: the command's process group is
stopped, the completed runs kept in the report and the board restored.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EdgeEnergyError
from ..options_spec import CONTROL_OPTIONS, add_arguments
from ..ranges import FloatRange, IntRange
from ..run.target import BoardTarget, parse_board
from .common import board_arguments
from .common import target as board_target

if TYPE_CHECKING:
    from ..control.operating_point import OperatingPoint
    from ..run.command_runs import CommandOutcome, CommandPlan, CommandRun, PointRuns
    from ..run.session import EnergySession

RUNS = IntRange(1, 10000, "runs")
WARMUP = IntRange(0, 1000, "runs")
ITEMS = IntRange(0, 2**53)
STOP_GRACE_S = FloatRange(0.0, 600.0, "s")
PIN_KEYS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
USAGE = (
    "edgeenergy measure [--board sim:MODEL | --root DIR] [--runs N] [--warmup K] "
    "[--report PATH] [options] -- CMD ARGS..."
)
EXIT_INTERRUPTED = {"SIGINT": 130, "SIGTERM": 143}


MEASURE_SECONDS = FloatRange(0.0, 7200.0, "s", above_low=True)
"""``measure --seconds``: up to what the sampler keeps (``meters.sampler.DEFAULT_RETAIN_S``);
a longer window would be reported invalid after the wait."""


def add_parser(sub: Any) -> None:
    """``edgeenergy measure``, on the command's subparsers ``sub``."""
    m = sub.add_parser(
        "measure",
        help="energy for S seconds, or of a command (-- CMD ARGS...)",
        epilog="To measure a command: " + USAGE + " (its options: edgeenergy measure --help --)",
    )
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


# -- a command: edgeenergy measure [options] -- CMD ARGS... ----------------------------


class _Usage(EdgeEnergyError):
    """Bad input: ``edgeenergy measure: error: <message>``, exit 2."""


def parser() -> argparse.ArgumentParser:
    from ..run.marks import MARK_ENV

    p = argparse.ArgumentParser(
        prog="edgeenergy measure",
        usage=USAGE,
        description="Measure the energy of a command: K warm-up runs, then N runs, each in "
        "one energy window from its start to its exit (per rail and in total, gross and net "
        "of idle power), with statistics over the runs. The command may mark windows of its "
        f"own: lines 'begin LABEL t_ns=NS' / 'end LABEL t_ns=NS [items=N]' written to the "
        f"FIFO named by ${MARK_ENV} (see `edgeenergy mark-helper`).",
        epilog="Exit status: 0 every run exited 0; 1 a run or warm-up did not; 2 bad input; "
        "130/143 stopped by Ctrl-C/SIGTERM (the command's process group stopped, the "
        "completed runs kept, the board restored). Without a command: edgeenergy measure "
        "--seconds S measures the board for S seconds (see its --help).",
    )
    where = p.add_mutually_exclusive_group()
    add_arguments(where, ["board", "root"])
    p.add_argument("--runs", type=RUNS, default=1, metavar="N",
                   help=f"measured runs (default 1); {RUNS.describe()}")  # fmt: skip
    p.add_argument("--warmup", type=WARMUP, default=0, metavar="K",
                   help=f"unmeasured runs first (default 0); {WARMUP.describe()}")  # fmt: skip
    p.add_argument(
        "--label",
        metavar="NAME",
        help="the whole run's entry in the report (default: the command's name)",
    )
    p.add_argument(
        "--items",
        type=ITEMS,
        metavar="N",
        help="work done by one run (frames, tokens, ...), for energy per item and throughput",
    )
    p.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the command's stdout and stderr (every run's) into FILE instead of "
        "passing them through",
    )
    p.add_argument(
        "--stop-grace-s",
        type=STOP_GRACE_S,
        default=5.0,
        metavar="S",
        help="after Ctrl-C or SIGTERM, how long the command's process group has to exit on "
        f"the same signal before SIGKILL (default 5); {STOP_GRACE_S.describe()}",
    )
    add_arguments(
        p,
        ["report", "report_overwrite", "interval_ms", "source", "sim_load", "idle_s"],
    )
    add_arguments(p.add_argument_group("operating point (pinned for every run)"), PIN_KEYS)
    add_arguments(p.add_argument_group("pinning"), list(CONTROL_OPTIONS))
    return p


def command_main(argv: list[str]) -> int:
    """``edgeenergy measure OPTIONS -- CMD ARGS...`` (``argv`` without ``measure``)."""
    i = argv.index("--")
    own, command = argv[:i], argv[i + 1 :]
    p = parser()
    args = p.parse_args(own)
    try:
        return _measure(args, command, argv)
    except _Usage as e:
        p.error(str(e))
        raise AssertionError("unreachable") from e


def _target(args: argparse.Namespace) -> BoardTarget:
    if args.board is not None and args.board != "auto":
        return parse_board(args.board, what="--board")
    root = args.root if args.root is not None else Path("/")
    if not root.is_dir():
        raise _Usage(f"--root {root}: not a directory")
    return BoardTarget(root=root)


def _plan(args: argparse.Namespace, command: list[str]) -> CommandPlan:
    from ..run.command import check_command
    from ..run.command_runs import CommandPlan

    check_command(command)
    label = args.label if args.label is not None else Path(command[0]).name
    if not label.strip():
        raise _Usage("--label '': give the whole run's entry a name")
    return CommandPlan(
        argv=tuple(command),
        label=label,
        runs=args.runs,
        warmup=args.warmup,
        items=args.items,
        output=args.output,
        stop_grace_s=args.stop_grace_s,
    )


def _measure(args: argparse.Namespace, command: list[str], argv: list[str]) -> int:
    from ..run.command import measure_command
    from ..run.session import EnergySession
    from ..safefs import sigterm_raises

    plan = _plan(args, command)
    target = _target(args)
    session = EnergySession(
        target.root if target.root is not None else target.text,
        report=args.report,
        lock=True,  # it pins, and a command measured beside another session's pins is not
        source=args.source,
        interval_s=args.interval_ms / 1000.0,
        idle_s=args.idle_s,
        sim_load=args.sim_load,
        report_overwrite=args.report_overwrite,
        dry_run=args.dry_run,
        force=args.force_mode,
        settle_s=args.settle_s,
        lock_timeout_s=args.lock_timeout_s,
        board_hint="measure on a virtual board with --board sim:MODEL (e.g. sim:orin-nano)",
        overwrite_hint="pass --report-overwrite",
        command_line=["edgeenergy", "measure", *argv],
    )
    try:
        with sigterm_raises(), session:
            points = _points(session, args)
            outcome = measure_command(
                session, plan, points, on_run=lambda p, r: _say(_run_line(plan, p, r))
            )
    except KeyboardInterrupt as e:  # outside the runs (opening the board, idle power)
        from ..safefs import Terminated

        how = "SIGTERM" if isinstance(e, Terminated) else "SIGINT"
        _say(f"edgeenergy: stopped ({how}) outside the runs; the board is restored")
        return EXIT_INTERRUPTED[how]
    _summary(plan, session, outcome)
    if outcome.interrupted is not None:
        return EXIT_INTERRUPTED[outcome.interrupted]
    return 1 if outcome.failed_runs else 0


def _points(session: EnergySession, args: argparse.Namespace) -> list[OperatingPoint]:
    from ..options_spec import GRID_OPTIONS

    values = {k: list(getattr(args, k)) for k in PIN_KEYS if getattr(args, k)}
    if not values:
        return []
    sources = {k: GRID_OPTIONS[k].cli_flag for k in values}
    return session.points(values, sources)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _run_line(plan: CommandPlan, runs: PointRuns, run: CommandRun) -> str:
    what = "warm-up" if run.window is None else "run"
    total = plan.warmup if run.window is None else plan.runs
    where = f" at {runs.point.id}" if runs.point is not None else ""
    line = f"edgeenergy: {what} {run.index} of {total}{where}: {run.exit_text}"
    if run.stopped_by is not None:
        line += f" (stopped: {run.stopped_by})"
    w = run.window
    if w is not None:
        energy = w.total.energy_j if w.valid else None
        line += f", {w.duration_s:.3f} s, " + (
            f"{energy:.4g} J" if energy is not None else f"INVALID: {w.invalid_reason}"
        )
        if run.marked:
            line += f", {len(run.marked)} marked"
    if run.problem_count:
        from ..words import counted

        line += f"; {counted(run.problem_count, 'mark problem')}: {run.problems[0]}"
    if run.left_running:
        line += "; processes of its group were still running after it exited"
    return line


def _summary(plan: CommandPlan, session: EnergySession, outcome: CommandOutcome) -> None:
    from ..present.tables import Table, render_text

    rows: list[list[Any]] = []
    for key in outcome.record_keys:
        rec = session.tests[key]
        m = rec.metrics or {}

        def value(name: str, stat: str = "mean", m: dict[str, Any] = m) -> float | None:
            s = m.get(name, {}).get("stats")
            return s[stat] if s and m[name].get("value") is not None else None

        op = rec.operating_point
        rows.append(
            [
                rec.nodeid,
                op["id"] if op else "dvfs",
                len(rec.windows),
                value("energy_j"),
                value("energy_j", "stdev"),
                value("energy_net_j"),
                value("duration_s"),
                value("power_mean"),
                value("power_peak", "max"),
                value("energy_per_item"),
                rec.status if rec.validity is None or rec.validity["valid"] else "invalid",
            ]
        )
    simulated = " (SIMULATED virtual board)" if session.simulated else ""
    columns = "entry point runs energy_J stdev_J net_J seconds mean_W peak_W J/item status"
    table = Table(
        columns=[c.replace("_", " ") for c in columns.split()],
        rows=rows,
        title=f"measured: {plan.label}{simulated}; means over the runs that exited 0",
    )
    if rows:
        _say(render_text(table).rstrip("\n"))
    for _, run in outcome.failed_runs:
        what = "warm-up" if run.window is None else "run"
        _say(f"edgeenergy: FAILED: {what} {run.index}: {run.exit_text}")
    if outcome.interrupted is not None:
        _say(
            f"edgeenergy: interrupted ({outcome.interrupted}): the command's process group "
            "was stopped and the board restored; the completed runs are kept"
        )
    if session.report_path is not None:
        for warning in _report_warnings(session.report_path):
            _say(f"edgeenergy: warning: {warning}")
        _say(f"report: {session.report_path}")


def _report_warnings(path: Path) -> list[str]:
    """The warnings the session wrote into its report (doubtful figures)."""
    import json

    try:
        found = json.loads(path.read_text(encoding="utf-8")).get("warnings") or []
    except (OSError, ValueError):
        return []
    return [str(w.get("message", w)) for w in found if isinstance(w, dict)]
