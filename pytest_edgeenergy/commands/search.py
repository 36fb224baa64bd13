"""``edgeenergy search``: find the best operating point of a replayed profile table
(:mod:`pytest_edgeenergy.search.offline`), alone or as one worker of a study shared by
several processes (``--storage URL --study NAME``, :mod:`pytest_edgeenergy.search.study_replay`),
and ``--show`` the whole study.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidValue
from ..options_spec import add_arguments
from ..search.objective import OBJECTIVES, Objective
from ..search.offline import check_budget, run_replay
from ..search.replay import ReplayTable, check_columns, read_replay
from ..search.trial import Trial

if TYPE_CHECKING:
    from ..search.study import SharedStudy


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


def search_main(argv: Sequence[str]) -> int:
    """Entry point of ``edgeenergy search`` (errors raise :class:`InvalidValue`)."""
    args = _parser().parse_args(list(argv))
    shared = None
    if args.storage is not None or args.study is not None or args.show or args.replay_delay_s:
        shared = _open_shared(args)
        if args.show:
            return _show(shared, as_json=args.json)
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
        check_budget(table, objective)
        return _replay_shared(shared, args, table, objective, prior, where)
    result = run_replay(table, objective, args.strategy, args.trials, seed=args.seed, prior=prior)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        from ..present.search import replay_text

        print(replay_text(result, table))
    return 0


# -- the shared study (--storage, --study) ------------------------------------------------


def _open_shared(args: argparse.Namespace) -> SharedStudy:
    """The study ``edgeenergy search --storage URL --study NAME`` names."""
    if args.storage is None or args.study is None:
        raise InvalidValue(
            "--storage URL and --study NAME go together (--show and --replay-delay-s need both)"
        )
    if not (math.isfinite(args.replay_delay_s) and 0 <= args.replay_delay_s <= 3600):
        raise InvalidValue(f"--replay-delay-s {args.replay_delay_s:g}: allowed 0-3600 s")
    from ..search.study import SharedStudy

    return SharedStudy(args.storage, args.study, heartbeat_s=args.study_heartbeat_s)


def _show(shared: SharedStudy, *, as_json: bool) -> int:
    """``--show``: the whole study."""
    from ..present.search import study_text
    from ..search.study_replay import show_json

    data = show_json(shared)
    print(json.dumps(data, indent=2) if as_json else study_text(data))
    return 0


def _replay_shared(
    shared: SharedStudy,
    args: argparse.Namespace,
    table: ReplayTable,
    objective: Objective,
    prior: Sequence[Trial],
    where: Mapping[str, str],
) -> int:
    """Replay ``table`` (``args.replay`` kept to the rows ``where`` names) as one worker of
    the study until it holds ``--trials`` trials; prints this worker's trials."""
    from ..search.study_replay import replay_worker

    out = replay_worker(
        shared,
        table,
        objective,
        prior,
        where,
        replay=args.replay,
        strategy_name=args.strategy,
        seed=args.seed,
        trials=args.trials,
        delay_s=args.replay_delay_s,
    )
    from ..present.search import worker_text

    print(json.dumps(out, indent=2) if args.json else worker_text(out))
    return 0
