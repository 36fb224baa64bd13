"""Benchmark: search strategies on AGX-Orin-like grids they were never tuned on.

Replays the generated grids of :mod:`orin_grid` (4,992 power modes each: 12 core counts x 8
CPU x 13 GPU x 4 EMC clocks, one training workload per seed). Per table: min-energy, and
min-time under power budgets at the 10th, 30th and 60th percentile of the table's power;
under those budgets a few dozen points or fewer lie within 3 % of the optimum (the
``near`` column: the share of the table's points that meet the budget within 3 % of the
best time). Each strategy searches with 15 and with 30 profiles (``--trials``), one search
per table, objective and profile count, seeded by the table's seed; the gap is the best
feasible profiled point's objective over the table's optimum, minus 1.

``--held-out`` replays the held-out seeds (the published figures); the default is the
development seeds, the only ones looked at while changing a strategy.

Run ``python benchmarks/bench_search_unseen.py`` (``--help``) or
``pytest benchmarks/bench_search_unseen.py --benchmark-only -s`` (held-out seeds).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from bench_search import optimum  # noqa: E402
from orin_grid import DEV_SEEDS, HELD_OUT_SEEDS, noise_free, table  # noqa: E402

from pytest_edgeenergy.search import Objective, Search, make_strategy  # noqa: E402
from pytest_edgeenergy.search.replay import ReplayOracle, ReplayTable  # noqa: E402

STRATEGIES = ("random", "optuna", "auto")
TRIALS = (15, 30)
BUDGET_QUANTILES = (0.1, 0.3, 0.6)
NEAR = 0.03
"""A point within this share of the optimum counts as near it."""


def objectives(t: ReplayTable) -> list[Objective]:
    powers = sorted(x.measured[1] for x in t.trials)
    out = [Objective("min-energy")]
    for q in BUDGET_QUANTILES:
        budget = round(powers[int(q * (len(powers) - 1))], 2)
        out.append(Objective("min-time", power_budget_w=budget))
    return out


def near_share(t: ReplayTable, objective: Objective) -> float:
    """The share of the table's points that are feasible and within :data:`NEAR` of the
    optimum."""
    best = optimum(t, objective)
    near = sum(
        objective.feasible(*x.measured) and objective.value(*x.measured) <= (1 + NEAR) * best
        for x in t.trials
    )
    return near / len(t.trials)


_TABLES: dict[int, ReplayTable] = {}


def _table(seed: int) -> ReplayTable:
    if seed not in _TABLES:
        _TABLES.clear()  # one table at a time per worker: jobs come grouped by table
        _TABLES[seed] = table(seed)
    return _TABLES[seed]


def _job(args: tuple[int, int, str, int]) -> dict[str, Any]:
    seed, index, strategy, trials = args
    t = _table(seed)
    objective = objectives(t)[index]
    chosen = make_strategy(strategy, t.space, objective, seed=seed, trials=trials)
    result = Search(t.space, objective, chosen).run(ReplayOracle(t), trials)
    ok = [
        objective.value(*x.measured)
        for x in result.trials
        if x.ok and objective.feasible(*x.measured)
    ]
    best = result.best
    return {
        "seed": seed,
        "objective": objective,
        "kind": "min-energy" if index == 0 else f"q{BUDGET_QUANTILES[index - 1]:g}",
        "strategy": strategy,
        "trials": trials,
        "gap": min(ok) / optimum(t, objective) - 1 if ok else math.inf,
        "over": best is not None and not objective.feasible(*best.measured),
        "near": near_share(t, objective),
    }


def evaluate(
    seeds: Sequence[int],
    strategies: Sequence[str] = STRATEGIES,
    trials: Sequence[int] = TRIALS,
    workers: int = 2,
) -> list[dict[str, Any]]:
    jobs = [
        (seed, index, s, k)
        for seed in seeds
        for index in range(1 + len(BUDGET_QUANTILES))
        for s in strategies
        for k in trials
    ]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_job, jobs, chunksize=len(strategies) * len(trials)))


def _pct(x: float) -> str:
    return "none" if math.isinf(x) else f"{100 * x:.1f}"


def _target(kind: str) -> float:
    return 0.05 if kind == "min-energy" else 0.10


def summary(results: Sequence[dict[str, Any]]) -> str:
    """Per objective kind (and all budgets together) and profile count: every strategy's
    gap, median / worst % over the tables, searches over the worst-case target in
    brackets."""
    strategies = list(dict.fromkeys(r["strategy"] for r in results))
    kinds = list(dict.fromkeys(r["kind"] for r in results))
    groups = [(k, [k]) for k in kinds] + [("all budgets", [k for k in kinds if k != "min-energy"])]
    lines = [
        "| objective | profiles | near % (median) | " + " | ".join(strategies) + " |",
        "|" + "---|" * (3 + len(strategies)),
    ]
    for label, members in groups:
        for k in sorted({r["trials"] for r in results}):
            mine = [r for r in results if r["kind"] in members and r["trials"] == k]
            if not mine:
                continue
            near = statistics.median(r["near"] for r in mine if r["strategy"] == strategies[0])
            cells = []
            for s in strategies:
                gaps = sorted(r["gap"] for r in mine if r["strategy"] == s)
                over = sum(g > _target(members[0]) for g in gaps)
                budget = sum(r["over"] for r in mine if r["strategy"] == s)
                flag = f" OVER BUDGET x{budget}" if budget else ""
                cells.append(
                    f"{_pct(statistics.median(gaps))} / {_pct(gaps[-1])} [{over}/{len(gaps)}]{flag}"
                )
            lines.append(f"| {label} | {k} | {100 * near:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def noise_free_gap(seed: int, objective: Objective) -> float:
    """How far the table's optimum (on recorded figures) is from the best point that
    meets the budget by its noise-free figures (:func:`orin_grid.noise_free`), that
    point's objective over the optimum minus 1: a search that ends within this of the
    optimum found all the budget allows beyond the measurement noise."""
    truth = noise_free(seed).values()
    best = min(objective.value(*x) for x in truth if objective.feasible(*x))
    return best / optimum(_table(seed), objective) - 1


def worst_cases(results: Sequence[dict[str, Any]], strategy: str = "auto", n: int = 8) -> str:
    """``strategy``'s largest gaps: table seed, objective, profiles; and the gap of the
    best point by noise-free figures (:func:`noise_free_gap`)."""
    mine = sorted((r for r in results if r["strategy"] == strategy), key=lambda r: -r["gap"])
    return "\n".join(
        f"  seed {r['seed']}, {r['objective'].describe()}, {r['trials']} profiles: "
        f"{_pct(r['gap'])} % (near {100 * r['near']:.2f} %; the best point without "
        f"noise {_pct(noise_free_gap(r['seed'], r['objective']))} %)"
        for r in mine[:n]
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--held-out", action="store_true", help="the held-out seeds (published)")
    p.add_argument("--seeds", type=int, default=None, help="only the first N seeds of the set")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--trials", default=",".join(map(str, TRIALS)), help="profile counts")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", type=Path, help="also write every search's gap here")
    args = p.parse_args(argv)
    seeds = HELD_OUT_SEEDS if args.held_out else DEV_SEEDS
    if args.seeds is not None:
        seeds = seeds[: args.seeds]
    trials = [int(k) for k in args.trials.split(",")]
    results = evaluate(seeds, args.strategies.split(","), trials, args.workers)
    if args.json:
        args.json.write_text(
            json.dumps([{**r, "objective": r["objective"].describe()} for r in results])
        )
    which = "held-out" if args.held_out else "development"
    print(
        f"Gap to the optimum, median / worst % over {len(seeds)} {which} tables "
        "(budgets: 3 per table); searches over the worst-case target (5 % min-energy, "
        "10 % min-time) in brackets:"
    )
    print()
    print(summary(results))
    for s in args.strategies.split(","):
        print()
        print(f"{s}: largest gaps")
        print(worst_cases(results, s))
    return 0


def test_search_on_unseen_tables(benchmark: Any) -> None:
    results = benchmark.pedantic(evaluate, args=(HELD_OUT_SEEDS,), rounds=1, iterations=1)
    print()
    print(summary(results))
    assert not any(r["over"] for r in results)


if __name__ == "__main__":
    raise SystemExit(main())
