"""``edgeenergy ab``: the command line, a live A/B run, and the offline ``--reports`` form
(the run itself: :mod:`pytest_edgeenergy.ab.driver`; the verdict:
:func:`pytest_edgeenergy.verdict.paired.ab_verdict`).

Exit codes, as ``compare``: 0 the gate passed, 1 a significant regression (or, with
``--fail-insufficient``, a test that could not be judged), 2 bad input: a bad ref or
directory, a bad option, a session that did not run to the end (naming the round and the
side, with its last lines), reports of different devices, an odd number of reports.
130 after Ctrl-C, 143 after SIGTERM (the worktrees, the virtual board and the lock are
cleaned up first).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..ab import AbError, Terminated
from ..ab.driver import AbPlan, check_pair, pair_reports, run_live, same_device
from ..bench.settings import REPEATS
from ..errors import EdgeEnergyError
from ..present.verdict import render_verdict
from ..ranges import IntRange
from ..report.load import load_report, require_tests
from ..verdict.expr import GateExpr, parse_expr
from ..verdict.model import GateVerdict
from ..verdict.paired import ab_verdict
from ..words import counted

ROUNDS = IntRange(2, 100)
"""Rounds: a paired spread needs two at least."""
DEFAULT_ROUNDS = 3
DEFAULT_MAX_ROUNDS = 10
FORMATS = ("table", "markdown")
MAX_SHOWN_IDS = 5
"""Test ids named in the rounds line per group (the rest counted)."""


def parser() -> argparse.ArgumentParser:
    """The ``edgeenergy ab`` argument parser (the pytest arguments follow ``--``)."""
    p = argparse.ArgumentParser(
        prog="edgeenergy ab",
        usage="edgeenergy ab --base REF_OR_DIR [--head REF_OR_DIR] [--rounds N] "
        "[--max-rounds M] --fail EXPR [--fail EXPR ...] [--fail-insufficient] [--out DIR] "
        "[--format table|markdown] -- PYTEST_ARGS...\n"
        "       edgeenergy ab --reports A1.json B1.json A2.json B2.json ... --fail EXPR",
        description="Measure two versions interleaved on one board (rounds in ABBA order, "
        "the board locked for all of them) and gate B against A with paired rounds; tests "
        "not yet decided get more rounds. Exit 0 pass, 1 regression, 2 bad input.",
    )
    p.add_argument(
        "--base",
        metavar="REF_OR_DIR",
        help="A: an existing directory (used as is), else a git ref of the repository "
        "around the current directory (checked out into a temporary worktree)",
    )
    p.add_argument(
        "--head",
        metavar="REF_OR_DIR",
        default=None,
        help="B, as --base (default: the current directory, uncommitted changes included)",
    )
    p.add_argument(
        "--rounds",
        type=ROUNDS,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"rounds for every test (default {DEFAULT_ROUNDS}); {ROUNDS.describe()}",
    )
    p.add_argument(
        "--max-rounds",
        type=ROUNDS,
        default=None,
        metavar="M",
        help="rounds at most for a test not yet decided, one more round at a time "
        f"(default {DEFAULT_MAX_ROUNDS}, at least --rounds); {ROUNDS.describe()}",
    )
    p.add_argument(
        "--fail",
        action="append",
        default=[],
        metavar="EXPR",
        help="gate, e.g. energy_per_item:mean:5%% (repeatable; required)",
    )
    p.add_argument(
        "--fail-insufficient",
        action="store_true",
        help="strict gate: a test that could not be judged (not decided after --max-rounds, "
        "failed or invalid on a side) fails it too",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where the sessions' reports and logs go (default: a new reports/ab-TIME)",
    )
    p.add_argument(
        "--round-repeats",
        type=REPEATS,
        default=None,
        metavar="N",
        help="--edge-repeats of every session (default: the run's --edge-repeats, 10 when not "
        "given, spread over --rounds, at least 2 each, so A/B measures about as much as "
        f"running both versions once); {REPEATS.describe()}",
    )
    p.add_argument("--format", choices=FORMATS, default="table", help="verdict format")
    p.add_argument(
        "--reports",
        nargs="+",
        type=Path,
        metavar="REPORT",
        help="offline: gate saved reports, A1 B1 A2 B2 ... (reports written by one "
        "`edgeenergy ab` run are paired by their round and side, in any order)",
    )
    return p


def _say(line: str) -> None:
    print(f"edgeenergy ab: {line}", file=sys.stderr, flush=True)


def ab_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``edgeenergy ab``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ab_argv, pytest_argv = _split_dashes(argv)
    try:
        args = parser().parse_args(ab_argv)
    except SystemExit as exc:  # argparse printed usage and the error
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.reports is not None:
            return _offline(args, pytest_argv)
        return _live(args, pytest_argv)
    except (EdgeEnergyError, OSError) as e:  # a bad ref, a busy board, a failed session...
        print(f"edgeenergy ab: error: {e}", file=sys.stderr)
        return 2
    except Terminated:
        _say("terminated (SIGTERM); cleaned up")
        return 143
    except KeyboardInterrupt:
        _say("interrupted; cleaned up")
        return 130


def _split_dashes(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" not in argv:
        return argv, None
    i = argv.index("--")
    return argv[:i], argv[i + 1 :]


def _exprs(args: argparse.Namespace) -> list[GateExpr]:
    if not args.fail:
        raise AbError("give the gate with --fail EXPR, e.g. --fail energy_per_item:mean:5%")
    return [parse_expr(e) for e in args.fail]


def _max_rounds(args: argparse.Namespace) -> int:
    if args.max_rounds is None:
        return max(DEFAULT_MAX_ROUNDS, int(args.rounds))
    if args.max_rounds < args.rounds:
        raise AbError(
            f"--max-rounds {args.max_rounds} is below --rounds {args.rounds}: the most rounds "
            "a test may take cannot be fewer than every test takes"
        )
    return int(args.max_rounds)


# -- live ------------------------------------------------------------------------------


def _live(args: argparse.Namespace, pytest_argv: list[str] | None) -> int:
    started = time.monotonic()
    if args.base is None:
        raise AbError("give --base REF_OR_DIR (or --reports REPORT... to gate saved reports)")
    exprs = _exprs(args)
    max_rounds = _max_rounds(args)
    plan = AbPlan(
        base=args.base,
        head=args.head if args.head is not None else ".",
        exprs=exprs,
        rounds=args.rounds,
        max_rounds=max_rounds,
        strict=args.fail_insufficient,
        out=args.out,
        round_repeats=args.round_repeats,
    )
    verdict, pairs, sessions, out = run_live(plan, pytest_argv, say=_say)
    extra = len(pairs) - args.rounds
    lines = _rounds_lines(verdict)
    lines.append(
        f"wall time {time.monotonic() - started:.1f} s: {counted(len(pairs), 'round')}"
        + (f" ({extra} extra for undecided tests)" if extra > 0 else "")
        + f", {sessions} pytest sessions; reports in {out}"
    )
    _show(verdict, lines, args.format, out / "verdict.md")
    return 1 if verdict.failed else 0


def _rounds_lines(verdict: GateVerdict) -> list[str]:
    """``rounds per test: 3 for 4 tests; 6 for test_x.py::test_b``."""
    used: Mapping[str, int] = getattr(verdict, "rounds", {})
    groups: dict[int, list[str]] = {}
    for test_id, n in used.items():
        groups.setdefault(n, []).append(test_id)
    if not groups:
        return []
    if len(groups) == 1:
        ((n, ids),) = groups.items()
        return [f"rounds per test: {n} for all {counted(len(ids), 'test')}"]
    parts = []
    for n in sorted(groups):
        ids = groups[n]
        shown = ", ".join(ids) if len(ids) <= MAX_SHOWN_IDS else counted(len(ids), "test")
        parts.append(f"{n} for {shown}")
    return ["rounds per test: " + "; ".join(parts)]


def _show(verdict: GateVerdict, lines: Sequence[str], fmt: str, saved: Path | None) -> None:
    """Print the verdict and ``lines``; the Markdown version also into ``saved`` and
    ``$GITHUB_STEP_SUMMARY`` (when CI provides one)."""
    markdown = render_verdict(verdict, "markdown") + "".join(f"\n- {line}" for line in lines)
    if fmt == "markdown":
        sys.stdout.write(markdown + "\n")
    else:
        sys.stdout.write(render_verdict(verdict, "table") + "".join(f"{x}\n" for x in lines))
    sys.stdout.flush()
    if saved is not None:
        try:
            saved.write_text(markdown + "\n", encoding="utf-8")
        except OSError as e:
            _say(f"warning: {saved}: {e.strerror or e}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(markdown + "\n")
        except OSError as e:
            _say(f"warning: GITHUB_STEP_SUMMARY {summary}: {e.strerror or e}")


# -- offline ---------------------------------------------------------------------------


def _offline(args: argparse.Namespace, pytest_argv: list[str] | None) -> int:
    if args.base is not None or args.head is not None or pytest_argv:
        raise AbError(
            "--reports gates saved reports: --base, --head and pytest arguments belong to a "
            "live run"
        )
    exprs = _exprs(args)
    paths: list[Path] = list(args.reports)
    if len(paths) % 2:
        raise AbError(
            f"--reports takes A and B reports in pairs (A1 B1 A2 B2 ...); got "
            f"{counted(len(paths), 'report')}, an odd count"
        )
    reports = []
    for path in paths:
        report = load_report(path)
        require_tests(report, path)
        reports.append(report)
    same_device(reports, [str(p) for p in paths])
    pairs, names, how = pair_reports(paths, reports)
    n = len(pairs)
    if n < ROUNDS.low:
        raise AbError(
            f"--reports: {counted(n, 'round')} cannot be judged: paired rounds need "
            f"{ROUNDS.low:g} at least (A1 B1 A2 B2)"
        )
    check_pair(pairs[0], exprs, ("A", "B"))
    verdict = ab_verdict(pairs, exprs, min(args.rounds, n), n, args.fail_insufficient, names)
    _show(verdict, [how, *_rounds_lines(verdict)], args.format, None)
    return 1 if verdict.failed else 0
