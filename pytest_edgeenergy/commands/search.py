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
from typing import TYPE_CHECKING, Any

from ..errors import InvalidValue
from ..options_spec import add_arguments
from ..search.driver import SearchResult
from ..search.objective import OBJECTIVES, Objective, metrics_text
from ..search.offline import check_budget, run_replay
from ..search.replay import ReplayTable, check_columns, read_replay
from ..search.trial import Trial, knobs_text
from ..words import counted

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
        print(_text(result, table))
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
    from ..search.study_replay import show_json

    data = show_json(shared)
    print(json.dumps(data, indent=2) if as_json else _show_text(data))
    return 0


def _show_text(data: Mapping[str, Any]) -> str:
    """The whole study (:func:`~pytest_edgeenergy.search.study_replay.show_json`) for people
    (withdrawn claims counted, not listed)."""
    from ..search.study_replay import objective_of

    lines = [f"study {data['study']} in {data['storage']}"]
    for s in data["searches"]:
        title = f"search {s['test']}: " if s["test"] else ""
        lines.append(
            f"{title}strategy {s.get('strategy')}, objective {objective_of(s).describe()}: "
            f"{s['counted']} trials done"
        )
        listed = [t for t in s["trials"] if t["status"] != "withdrawn"]
        wide_w = max((len(t["worker"]) for t in listed), default=0)
        wide_k = max((len(knobs_text(t["knobs"])) for t in listed), default=0)
        for t in listed:
            head = f"  #{t['number']:<3} {t['worker']:{wide_w}}  {knobs_text(t['knobs']):{wide_k}}"
            if t["status"] == "measured":
                lines.append(f"{head} {_figures(t)}{_verdict_of(t)}")
            else:
                lines.append(
                    f"{head} {t['status']}" + (f": {t['reason']}" if "reason" in t else "")
                )
        if s["withdrawn"]:
            lines.append(
                f"  {counted(s['withdrawn'], 'withdrawn claim')} not listed: a point two workers "
                "claimed at once stays with the first (PRUNED in Optuna, not counted)"
            )
        lines.append("  per worker:")
        for worker, counts in sorted(s["workers"].items()):
            said = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            own = next((t for t in listed if t["worker"] == worker and "strategy" in t), None)
            how = f" ({own['strategy']}, seed {own['seed']})" if own is not None else ""
            lines.append(f"    {worker}{how}: {said}")
        b = s["best"]
        if b is None:
            lines.append("  best: no measured point met the budget")
        else:
            lines.append(
                f"  best: {knobs_text(b['knobs'])}: {b['time_s']:.4g} s, {b['power_w']:.4g} W, "
                f"{b['energy_j']:.4g} J" + metrics_text(b.get("metrics") or {})
            )
        if s["front"] is not None:
            lines.append("  pareto front (time vs energy):")
            lines += [
                f"    {knobs_text(t['knobs'])}: {t['time_s']:.4g} s, {t['energy_j']:.4g} J"
                for t in s["front"]
            ]
    return "\n".join(lines)


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
    print(json.dumps(out, indent=2) if args.json else _worker_text(out))
    return 0


def _worker_text(out: Mapping[str, Any]) -> str:
    lines = [
        f"worker {out['worker']} in study {out['study']} ({out['storage']}): strategy "
        f"{out['strategy']}, seed {out['seed']}, objective {out['objective']}: "
        f"{len(out['trials'])} trials of its own, {out['study_trials']} in the study"
    ]
    wide = max((len(knobs_text(t["knobs"])) for t in out["trials"]), default=0)
    for t in out["trials"]:
        head = f"  #{t['number']:<3} {knobs_text(t['knobs']):{wide}}"
        if t["failed"] is None:
            line = f"{head} {_figures(t)}{_verdict_of(t)}"
        else:
            line = f"{head} failed: {t['failed']}"
        lines.append(line + (f"  (not counted: {t['not_counted']})" if "not_counted" in t else ""))
    lines.append(
        f"the whole study: edgeenergy search --storage {out['storage']} --study "
        f"{out['study']} --show"
    )
    return "\n".join(lines)


def _verdict_of(t: Mapping[str, Any]) -> str:
    """How a measured trial's line ends (its JSON with ``feasible``), as a one-process
    search prints it: nothing when it meets the budgets, else why not."""
    if t["feasible"]:
        return ""
    return f"  infeasible: {t['infeasible']}" if "infeasible" in t else "  over budget"


def _figures(t: Mapping[str, Any]) -> str:
    return f"{t['time_s']:.4g} s  {t['power_w']:.4g} W  {t['energy_j']:.4g} J" + metrics_text(
        t.get("metrics") or {}
    )
