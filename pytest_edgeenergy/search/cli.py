"""``edgeenergy search``: find the best operating point of a replayed profile table.

The same :class:`~.driver.Search` the plugin drives on a live board, with a
:class:`~.replay.ReplayOracle` answering from the table.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from ..errors import InvalidValue
from ..options_spec import add_arguments
from .driver import Search, SearchResult
from .objective import OBJECTIVES, Objective, metrics_text
from .replay import ReplayOracle, ReplayTable, check_columns, read_replay
from .strategies import make_strategy
from .trial import Trial, knobs_text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="edgeenergy search",
        description="Search a replayed profile table for the best operating point.",
    )
    p.add_argument(
        "--replay",
        type=Path,
        metavar="FILE",
        help="CSV (knob columns, time_s, power_w or energy_j) or a sweep's report",
    )
    # The options --edge-search takes in pytest, described once (options_spec).
    add_arguments(
        p,
        ("objective", "power_budget_w", "latency_budget_s", "trials", "strategy", "seed"),
        defaults={"strategy": "auto"},
        choices={"objective": OBJECTIVES},
    )
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COLUMN=VALUE",
        help="keep only these rows (one workload of a table holding several)",
    )
    add_arguments(p, ("prior",))
    p.add_argument("--prior-where", action="append", default=[], metavar="COLUMN=VALUE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    # A study shared by several processes (pytest_edgeenergy.search.study).
    add_arguments(p, ("storage", "study", "study_heartbeat_s"))
    p.add_argument(
        "--show",
        action="store_true",
        help="with --storage and --study: print the whole study instead of searching",
    )
    p.add_argument(
        "--replay-delay-s",
        type=float,
        default=0.0,
        metavar="S",
        help="wait S seconds in each replayed measurement (a stand-in for a profile's duration)",
    )
    return p


def _where(items: Sequence[str], option: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InvalidValue(f"{option} {item!r}: expected COLUMN=VALUE")
        out[key.strip()] = value.strip()
    return out


def check_budget(table: ReplayTable, objective: Objective) -> None:
    """Refuse a budget that no point of ``table`` meets, naming the closest point."""
    if any(objective.feasible(*t.measured, t.metrics) for t in table.trials):
        return
    if objective.power_budget_w is not None:
        low = min(table.trials, key=lambda t: t.power_w or 0.0)
        if low.power_w is not None and low.power_w > objective.power_budget_w:
            raise InvalidValue(
                f"no operating point meets {objective.power_budget_w:g} W; the lowest "
                f"measured was {low.power_w:.4g} W at {knobs_text(low.knobs)}"
            )
    if objective.latency_budget_s is not None:
        fast = min(table.trials, key=lambda t: objective.latency_s(t.measured[0], t.metrics))
        fast_s = objective.latency_s(fast.measured[0], fast.metrics)
        if fast_s > objective.latency_budget_s:
            what = "lowest inference latency p99" if objective.needs else "fastest"
            raise InvalidValue(
                f"no operating point meets {objective.latency_budget_s:g} s; the {what} "
                f"measured was {fast_s:.4g} s at {knobs_text(fast.knobs)}"
            )
    raise InvalidValue(f"no operating point meets both budgets ({objective.describe()})")


def run_replay(
    table: ReplayTable,
    objective: Objective,
    strategy: str,
    trials: int,
    *,
    seed: int = 0,
    prior: Sequence[Trial] = (),
) -> SearchResult:
    """Search ``table`` with a replay oracle (everything checked before the first trial)."""
    if trials < 1:
        raise InvalidValue(f"--trials {trials}: must be at least 1")
    check_budget(table, objective)
    chosen = make_strategy(strategy, table.space, objective, seed=seed, prior=prior, trials=trials)
    return Search(table.space, objective, chosen).run(ReplayOracle(table), trials)


def _text(result: SearchResult, table: ReplayTable) -> str:
    lines = [
        f"strategy {result.strategy}, objective {result.objective.describe()}: "
        f"{result.profiles} of {len(table.trials)} points profiled"
    ]
    for i, t in enumerate(result.trials):
        if t.ok:
            ok = result.objective.feasible(*t.measured, t.metrics)
            lines.append(
                f"  trial{i:<3} {knobs_text(t.knobs):60} {t.time_s:.4g} s  {t.power_w:.4g} W  "
                f"{t.energy_j:.4g} J{metrics_text(t.metrics)}{'' if ok else '  over budget'}"
            )
        else:
            lines.append(f"  trial{i:<3} {knobs_text(t.knobs):60} failed: {t.failed}")
    b = result.best
    if b is None:
        lines.append("best: no profiled point met the budget")
    else:
        lines.append(
            f"best: {knobs_text(b.knobs)}: {b.time_s:.4g} s, {b.power_w:.4g} W, {b.energy_j:.4g} J"
            + metrics_text(b.metrics)
        )
    if result.objective.multi:
        lines.append("pareto front (time vs energy):")
        lines += [
            f"  {knobs_text(t.knobs)}: {t.time_s:.4g} s, {t.energy_j:.4g} J" for t in result.front
        ]
    return "\n".join(lines)


def search_main(argv: Sequence[str]) -> int:
    """Entry point of ``edgeenergy search`` (errors raise :class:`InvalidValue`)."""
    args = _parser().parse_args(list(argv))
    shared = None
    if args.storage is not None or args.study is not None or args.show or args.replay_delay_s:
        from .study_cli import open_shared, show_main

        shared = open_shared(args)
        if args.show:
            return show_main(shared, as_json=args.json)
    if args.replay is None or args.trials is None:
        raise InvalidValue("--replay FILE and --trials N are required (or --show with --study)")
    objective = Objective(args.objective, args.power_budget_w, args.latency_budget_s)
    where = _where(args.where, "--where")
    table = read_replay(args.replay, where)
    check_columns(table, objective, str(args.replay))
    prior: tuple[Trial, ...] = ()
    if args.prior is not None:
        if args.strategy != "auto":
            raise InvalidValue(f"--prior seeds the auto strategy only, not {args.strategy!r}")
        prior = read_replay(args.prior, _where(args.prior_where, "--prior-where")).trials
    if shared is not None:
        from .study_cli import replay_shared

        check_budget(table, objective)
        return replay_shared(shared, args, table, objective, prior, where)
    result = run_replay(table, objective, args.strategy, args.trials, seed=args.seed, prior=prior)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(_text(result, table))
    return 0
