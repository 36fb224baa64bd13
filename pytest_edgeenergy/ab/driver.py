"""A live A/B run and the pairing of saved reports: what ``edgeenergy ab`` runs.

:func:`run_live` checks out both sides, opens the board (locked for all rounds), runs
``rounds`` rounds and then one more at a time for the tests not yet decided, up to
``max_rounds``, and cleans everything up on every exit (SIGTERM raises
:class:`~pytest_edgeenergy.ab.Terminated`). :func:`pair_reports` pairs saved reports for the
offline form (``--reports``). The verdict is :func:`pytest_edgeenergy.verdict.paired.ab_verdict`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from ..report.model import device_label
from ..safefs import signals_held, sigterm_raises
from ..verdict.expr import GateExpr
from ..verdict.model import GateVerdict
from ..verdict.paired import ab_verdict
from ..verdict.view import expr_metrics, gate_view, require_carried
from ..words import counted
from . import AbError
from .board import open_board
from .checkout import new_scratch, prepare
from .pytest_args import (
    PytestArgs,
    dropped_because,
    read_pytest_args,
    round_repeats,
    session_environment,
)
from .rounds import Sessions

Pair = tuple[dict[str, Any], dict[str, Any]]


@dataclass(frozen=True)
class AbPlan:
    """What a live A/B run was asked for (the command's options, checked)."""

    base: str
    head: str
    exprs: Sequence[GateExpr]
    rounds: int
    max_rounds: int
    strict: bool
    out: Path | None
    round_repeats: int | None


class LiveRun(NamedTuple):
    """What a live A/B run did: its verdict, the rounds' report pairs, how many pytest
    sessions it ran and where their reports are."""

    verdict: GateVerdict
    pairs: list[Pair]
    sessions: int
    out: Path


def _out_dir(given: Path | None) -> Path:
    if given is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        given = Path("reports") / f"ab-{stamp}"
    out = given.absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise AbError(
            f"--out {given}: exists and is not an empty directory; give a new directory "
            "(each A/B run writes A-1.json, B-1.json, ... there)"
        )
    out.mkdir(parents=True, exist_ok=True)
    return out


def run_live(plan: AbPlan, pytest_argv: list[str] | None, *, say: Callable[[str], None]) -> LiveRun:
    """Measure both sides interleaved on one board and judge them (see the module
    docstring); ``say`` tells the progress."""
    pytest_args = read_pytest_args(pytest_argv or [], os.environ)
    stack = ExitStack()
    try:
        with sigterm_raises():
            scratch = new_scratch(stack)
            cwd = Path.cwd()
            base = prepare(plan.base, "--base", cwd=cwd, scratch=scratch, stack=stack, say=say)
            new = prepare(plan.head, "--head", cwd=cwd, scratch=scratch, stack=stack, say=say)
            out = _out_dir(plan.out)
            say(f"A = base {base.describe()}")
            say(f"B = head {new.describe()}")
            board = open_board(pytest_args, stack, say=say)
            if board.unprotected is None:
                say(f"board {board.name}: locked for all rounds")
            for name in pytest_args.dropped_env:
                say(f"{name} is left out of the sessions' environment: {dropped_because(name)}")
            sessions = Sessions(
                sides={"A": base, "B": new},
                out=out,
                board_root=board.root,
                token=board.token,
                pytest_args=pytest_args.rest + _repeats_arg(pytest_args, plan, say),
                environ=session_environment(os.environ),
                session_id=secrets.token_hex(8),
                say=say,
            )
            names = (f"base {base.spec}", f"head {new.spec}")
            verdict, pairs = _rounds(sessions, plan, names, say)
    finally:
        with signals_held():  # a second Ctrl-C waits until everything is cleaned up
            stack.close()
    return LiveRun(verdict, pairs, sessions.count, out)


def _repeats_arg(pytest_args: PytestArgs, plan: AbPlan, say: Callable[[str], None]) -> list[str]:
    repeats = round_repeats(pytest_args, plan.rounds, plan.round_repeats)
    if repeats is None:
        return []
    say(f"{counted(repeats, 'repeat')} per session (--round-repeats)")
    return [f"--edge-repeats={repeats}"]


def _rounds(
    sessions: Sessions, plan: AbPlan, names: tuple[str, str], say: Callable[[str], None]
) -> tuple[GateVerdict, list[Pair]]:
    """Run ``rounds`` rounds, then one more at a time for the undecided tests."""
    exprs = plan.exprs
    pairs: list[Pair] = []
    for round_no in range(1, plan.rounds + 1):
        a, b = sessions.run_round(round_no)
        pairs.append((a.report, b.report))
        if round_no == 1:
            check_pair(pairs[0], exprs, (str(a.report_path), str(b.report_path)))
    verdict = ab_verdict(pairs, exprs, plan.rounds, plan.max_rounds, plan.strict, names)
    while _undecided(verdict) and len(pairs) < plan.max_rounds:
        undecided = _undecided(verdict)
        round_no = len(pairs) + 1
        say(f"round {round_no}: {counted(len(undecided), 'undecided test')} measured again")
        a, b = sessions.run_round(round_no, undecided)
        pairs.append((a.report, b.report))
        verdict = ab_verdict(pairs, exprs, plan.rounds, plan.max_rounds, plan.strict, names)
    return verdict, pairs


def _undecided(verdict: GateVerdict) -> list[str]:
    return list(getattr(verdict, "undecided", []))


def check_pair(pair: Pair, exprs: Sequence[GateExpr], names: tuple[str, str]) -> None:
    """Both reports of one device, and every expression's metric carried by B (checked
    after the first round, not after the last; the verdict checks the same)."""
    same_device([pair[0], pair[1]], list(names))
    require_carried(gate_view(pair[1], expr_metrics(exprs)), exprs, names[1])


def same_device(reports: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    first = reports[0]["device"]
    for report, name in zip(reports[1:], names[1:], strict=True):
        device = report["device"]
        if device["fingerprint"] != first["fingerprint"]:
            raise AbError(
                f"{name} was measured on {device_label(device)} (fingerprint "
                f"{device['fingerprint']}), {names[0]} on {device_label(first)} "
                f"({first['fingerprint']}): A/B pairs must come from one device"
            )


def pair_reports(
    paths: Sequence[Path], reports: Sequence[dict[str, Any]]
) -> tuple[list[Pair], tuple[str, str], str]:
    """Pairs by the reports' ``ab`` objects when all come from one A/B run, else in the
    order given; with the names of A and B and a line saying how they were paired."""
    abs_ = [r.get("ab") for r in reports]
    sessions = {a.get("session") for a in abs_ if isinstance(a, dict)}
    if not all(isinstance(a, dict) for a in abs_) or len(sessions) != 1:
        pairs = [(reports[i], reports[i + 1]) for i in range(0, len(reports), 2)]
        line = f"paired in the order given: {counted(len(pairs), 'round')}, A first in each"
        return pairs, ("A", "B"), line
    by_key: dict[tuple[int, str], int] = {}
    for i, a in enumerate(abs_):
        assert isinstance(a, dict)
        key = (int(a["round"]), str(a["side"]))
        if key in by_key:
            raise AbError(
                f"{paths[by_key[key]]} and {paths[i]} are both side {key[1]} of round "
                f"{key[0]} of A/B run {a['session']}"
            )
        by_key[key] = i
    pairs = []
    for round_no in sorted({r for r, _ in by_key}):
        sides = [by_key.get((round_no, side)) for side in ("A", "B")]
        if sides[0] is None or sides[1] is None:
            lacking = "A" if sides[0] is None else "B"
            raise AbError(f"round {round_no} of A/B run {sessions.pop()} lacks side {lacking}")
        pairs.append((reports[sides[0]], reports[sides[1]]))
    first = (pairs[0][0]["ab"]["ref"], pairs[0][1]["ab"]["ref"])
    line = f"paired by the reports' rounds and sides: {counted(len(pairs), 'round')}"
    return pairs, (f"base {first[0]}", f"head {first[1]}"), line
