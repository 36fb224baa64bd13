"""The shared study on the command line: ``edgeenergy search --storage URL --study NAME``
replaying a table as one worker of the study, and ``--show`` printing the whole study.

Imported by :mod:`.cli` only when ``--storage`` is given (it imports Optuna through
:mod:`.study`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidValue
from ..words import counted
from .driver import Search, best, pareto_front
from .objective import Objective, metrics_text
from .replay import ReplayOracle, ReplayTable
from .space import Knobs
from .strategy import rank
from .study import SharedStudy, read_trials
from .trial import Trial, knobs_text

__all__ = [
    "REPLAY_TEST",
    "open_shared",
    "replay_shared",
    "show_json",
    "show_main",
    "show_text",
    "table_sha256",
]


# -- --show -------------------------------------------------------------------------------


def _objective_of(config: Mapping[str, Any]) -> Objective:
    return Objective(
        str(config.get("objective", "min-energy")),
        config.get("power_budget_w"),
        config.get("latency_budget_s"),
    )


def _searches(attrs: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Each search's identity by test, from the study's user attrs (``search``, ``search
    TEST``; a format 1 study's ``config:TEST``)."""
    out: dict[str, Mapping[str, Any]] = {}
    for key, value in attrs.items():
        if not isinstance(value, Mapping):
            continue
        if key == "search" or key.startswith("search "):
            out[key.removeprefix("search").removeprefix(" ")] = value
        elif key.startswith("config:"):
            out[key.removeprefix("config:")] = value
    return out


def _feasible(trial: Trial, objective: Objective) -> bool:
    return rank(trial, objective)[0] == 0


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


def show_json(shared: SharedStudy) -> dict[str, Any]:
    """The whole study: per search, its identity, trials (with worker and, measured, whether
    within the budgets), per-worker counts (withdrawn claims apart), best and (pareto)
    front over every worker's measured trials."""
    study = shared.load()
    shared.fail_stale(study)
    trials = read_trials(study)
    configs = _searches(study.user_attrs)
    searches = []
    for test in sorted(configs.keys() | {t.test for t in trials}):
        config = configs.get(test, {})
        objective = _objective_of(config)
        mine = [t for t in trials if t.test == test]
        measured = [t.trial for t in mine if t.status == "measured"]
        top = best(measured, objective)
        workers: dict[str, dict[str, int]] = {}
        for t in mine:
            if t.status != "withdrawn":
                counts = workers.setdefault(t.worker, {})
                counts[t.status] = counts.get(t.status, 0) + 1
        strategies = list(dict.fromkeys(t.strategy for t in mine if t.strategy is not None))
        searches.append(
            {
                "test": test,
                **config,
                "strategy": "/".join(strategies) or config.get("strategy"),
                "trials": [
                    {
                        **t.to_json(),
                        **(
                            {"feasible": _feasible(t.trial, objective)}
                            if t.status == "measured"
                            else {}
                        ),
                    }
                    for t in mine
                ],
                "counted": sum(t.status in ("measured", "failed") for t in mine),
                "withdrawn": sum(t.status == "withdrawn" for t in mine),
                "workers": workers,
                "best": top.to_json() if top is not None else None,
                "front": (
                    [t.to_json() for t in pareto_front(measured, objective)]
                    if objective.multi
                    else None
                ),
            }
        )
    return {"study": shared.name, "storage": shared.url, "searches": searches}


def show_text(data: Mapping[str, Any]) -> str:
    """:func:`show_json`'s data for people (withdrawn claims counted, not listed)."""
    lines = [f"study {data['study']} in {data['storage']}"]
    for s in data["searches"]:
        title = f"search {s['test']}: " if s["test"] else ""
        lines.append(
            f"{title}strategy {s.get('strategy')}, objective {_objective_of(s).describe()}: "
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


# -- edgeenergy search --storage ----------------------------------------------------------

REPLAY_TEST = ""
"""The search key of ``edgeenergy search --replay`` in a study (pytest's are test ids)."""


class _DelayedOracle:
    """A replay oracle that takes ``delay_s`` per measurement (a profile's stand-in)."""

    def __init__(self, oracle: ReplayOracle, delay_s: float) -> None:
        self.oracle = oracle
        self.delay_s = delay_s

    def measure(self, knobs: Knobs) -> Trial:
        time.sleep(self.delay_s)
        return self.oracle.measure(knobs)


def open_shared(args: argparse.Namespace) -> SharedStudy:
    """The study ``edgeenergy search --storage URL --study NAME`` names."""
    if args.storage is None or args.study is None:
        raise InvalidValue(
            "--storage URL and --study NAME go together (--show and --replay-delay-s need both)"
        )
    if not (math.isfinite(args.replay_delay_s) and 0 <= args.replay_delay_s <= 3600):
        raise InvalidValue(f"--replay-delay-s {args.replay_delay_s:g}: allowed 0-3600 s")
    return SharedStudy(args.storage, args.study, heartbeat_s=args.study_heartbeat_s)


def show_main(shared: SharedStudy, *, as_json: bool) -> int:
    """``--show``: the whole study."""
    data = show_json(shared)
    print(json.dumps(data, indent=2) if as_json else show_text(data))
    return 0


def table_sha256(path: Path) -> str:
    """The SHA-256 of a replayed table's file (what ``sha256sum`` prints)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def replay_shared(
    shared: SharedStudy,
    args: argparse.Namespace,
    table: ReplayTable,
    objective: Objective,
    prior: Sequence[Trial],
    where: Mapping[str, str],
) -> int:
    """Replay ``table`` (``args.replay`` kept to the rows ``where`` names) as one worker of
    the study until it holds ``--trials`` trials; prints this worker's trials."""
    from .strategies import make_strategy

    strategy = make_strategy(
        args.strategy, table.space, objective, seed=args.seed, prior=prior, trials=args.trials
    )
    search = Search(table.space, objective, strategy)
    inputs = {"table_sha256": table_sha256(args.replay), "where": dict(sorted(where.items()))}
    shared.join(
        REPLAY_TEST,
        table.space,
        objective,
        strategy=args.strategy,
        seed=args.seed,
        inputs=inputs,
    )
    oracle = _DelayedOracle(ReplayOracle(table), args.replay_delay_s)
    mine: list[dict[str, Any]] = []
    while (claim := shared.claim(REPLAY_TEST, search, args.trials)) is not None:
        trial = search.measure(oracle, claim.knobs)
        why = shared.finish(REPLAY_TEST, table.space, claim, trial, objective, args.trials)
        mine.append(
            {
                "number": claim.number,
                **trial.to_json(),
                **({"feasible": _feasible(trial, objective)} if trial.ok else {}),
                **({"not_counted": why} if why else {}),
            }
        )
    done = shared.view(REPLAY_TEST, objective).done
    out = {
        "study": shared.name,
        "storage": shared.url,
        "worker": shared.worker,
        "objective": objective.describe(),
        "strategy": args.strategy,
        "seed": args.seed,
        "study_trials": done,
        "trials": mine,
    }
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
