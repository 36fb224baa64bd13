"""The shared study offline: a replayed table searched as one worker of a study shared by
several processes (:func:`replay_worker`), and the whole study as data (:func:`show_json`).
``edgeenergy search --storage URL --study NAME`` (and ``--show``) prints them.

Imported by the command only when ``--storage`` is given (it imports Optuna through
:mod:`.study`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .driver import Search, best, pareto_front
from .objective import Objective
from .replay import ReplayOracle, ReplayTable
from .space import Knobs
from .strategy import rank
from .study import SharedStudy, read_trials
from .trial import Trial

__all__ = [
    "REPLAY_TEST",
    "objective_of",
    "replay_worker",
    "show_json",
    "table_sha256",
]


# -- --show -------------------------------------------------------------------------------


def objective_of(config: Mapping[str, Any]) -> Objective:
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
        objective = objective_of(config)
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


def table_sha256(path: Path) -> str:
    """The SHA-256 of a replayed table's file (what ``sha256sum`` prints)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def replay_worker(
    shared: SharedStudy,
    table: ReplayTable,
    objective: Objective,
    prior: Sequence[Trial],
    where: Mapping[str, str],
    *,
    replay: Path,
    strategy_name: str,
    seed: int,
    trials: int,
    delay_s: float = 0.0,
) -> dict[str, Any]:
    """Replay ``table`` (the file ``replay`` kept to the rows ``where`` names) as one worker
    of the study until it holds ``trials`` trials; returns this worker's trials (what
    ``edgeenergy search --storage`` prints)."""
    from .strategies import make_strategy

    strategy = make_strategy(
        strategy_name, table.space, objective, seed=seed, prior=prior, trials=trials
    )
    search = Search(table.space, objective, strategy)
    inputs = {"table_sha256": table_sha256(replay), "where": dict(sorted(where.items()))}
    shared.join(
        REPLAY_TEST,
        table.space,
        objective,
        strategy=strategy_name,
        seed=seed,
        inputs=inputs,
    )
    oracle = _DelayedOracle(ReplayOracle(table), delay_s)
    mine: list[dict[str, Any]] = []
    while (claim := shared.claim(REPLAY_TEST, search, trials)) is not None:
        trial = search.measure(oracle, claim.knobs)
        why = shared.finish(REPLAY_TEST, table.space, claim, trial, objective, trials)
        mine.append(
            {
                "number": claim.number,
                **trial.to_json(),
                **({"feasible": _feasible(trial, objective)} if trial.ok else {}),
                **({"not_counted": why} if why else {}),
            }
        )
    done = shared.view(REPLAY_TEST, objective).done
    return {
        "study": shared.name,
        "storage": shared.url,
        "worker": shared.worker,
        "objective": objective.describe(),
        "strategy": strategy_name,
        "seed": seed,
        "study_trials": done,
        "trials": mine,
    }
