"""Benchmark: how close each search strategy gets to a table's true optimum in k profiles.

Replays real profiling tables (see :mod:`search_tables`: Orin Nano training over cores x
CPU x GPU x EMC frequency, and GPU frequency x batch size inference on three boards), one
search per workload x board group. For each strategy, objective and seed the search runs
``TRIALS`` profiles (``--trials``) against a replay oracle; the gap after k profiles is the
objective of the best feasible point profiled so far over the table's true optimum, minus 1 ("none":
no feasible point profiled yet). Objectives: min-energy, and min-time under power budgets
at the 10th, 30th and 60th percentile of the group's power (so 10 %+ of the points meet
each). Also the auto strategy's predictor error after ``TRIALS`` profiles: MAPE of time
and power on the points it did not profile.

Run ``python benchmarks/bench_search.py`` (``--help``: seeds, strategies, groups) or
``pytest benchmarks/bench_search.py --benchmark-only -s`` (the full table once).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Tiny matrices: BLAS threads in each worker process only contend with one another.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from search_tables import groups  # noqa: E402

from pytest_edgeenergy.search import Objective, Search, Trial, make_strategy  # noqa: E402
from pytest_edgeenergy.search.replay import ReplayOracle, ReplayTable  # noqa: E402

TRIALS = 30
KS = (10, 15, 20)
SEEDS = 20
STRATEGIES = ("random", "binary", "optuna", "auto", "auto+prior")
PRIOR_OF = {
    "orin-nano train resnet": "orin-nano train mobnet",
    "orin-nano train mobnet": "orin-nano train resnet",
    "loudva AGX": "loudva NX",
    "loudva NX": "loudva AGX",
    "loudva Nano": "loudva NX",
}
"""``auto+prior``: auto seeded with every profile of another workload (or board)."""
BUDGET_QUANTILES = (0.1, 0.3, 0.6)


@dataclass(frozen=True)
class Case:
    group: str
    objective: Objective


def cases(tables: dict[str, ReplayTable]) -> list[Case]:
    out = []
    for name, table in tables.items():
        out.append(Case(name, Objective("min-energy")))
        powers = sorted(t.measured[1] for t in table.trials)
        for q in BUDGET_QUANTILES:
            budget = round(powers[int(q * (len(powers) - 1))], 2)
            out.append(Case(name, Objective("min-time", power_budget_w=budget)))
    return out


def worst_target(objective: Objective) -> float:
    """The issue's worst-case target for ``auto``: 5 % min-energy, 10 % under a budget."""
    return 0.05 if objective.name == "min-energy" else 0.10


def optimum(table: ReplayTable, objective: Objective) -> float:
    return min(
        objective.value(*t.measured) for t in table.trials if objective.feasible(*t.measured)
    )


def perturbed(table: ReplayTable, noise: float, seed: int) -> ReplayTable:
    """``table`` with every time and power multiplied by exp(N(0, noise)), a fresh draw per
    seed: another measurement of the same board, to see whether a result rests on one
    table's noise."""
    if noise <= 0:
        return table
    rng = random.Random(f"noise:{seed}")
    trials = tuple(
        Trial(
            knobs=t.knobs,
            time_s=t.measured[0] * math.exp(rng.gauss(0.0, noise)),
            power_w=t.measured[1] * math.exp(rng.gauss(0.0, noise)),
        )
        for t in table.trials
    )
    return ReplayTable(table.space, trials)


def _job(args: tuple[str, Objective, str, int, int, float]) -> dict[str, Any]:
    group, objective, strategy, seed, trials, noise = args
    if not _TABLES:
        _init()
    table = perturbed(_TABLES[group], noise, seed)
    prior = _TABLES[PRIOR_OF[group]].trials if strategy == "auto+prior" else ()
    name = strategy.partition("+")[0]
    chosen = make_strategy(name, table.space, objective, seed=seed, prior=prior, trials=trials)
    result = Search(table.space, objective, chosen).run(ReplayOracle(table), trials)
    opt = optimum(table, objective)
    gaps = {}
    for k in ks(trials):
        ok = [
            objective.value(*t.measured)
            for t in result.trials[:k]
            if t.ok and objective.feasible(*t.measured)
        ]
        gaps[k] = min(ok) / opt - 1 if ok else math.inf
    over = result.best is not None and not objective.feasible(*result.best.measured)
    out: dict[str, Any] = {"gaps": gaps, "over_budget": over, "profiles": result.profiles}
    if name == "auto":
        done = {tuple(sorted(t.knobs.items())) for t in result.trials}
        rest = [t for t in table.trials if tuple(sorted(t.knobs.items())) not in done]
        points = [table.space.point(t.knobs) for t in rest]
        time_s, power_w = chosen.predict(result.trials, points)  # type: ignore[attr-defined]
        out["mape_time"] = statistics.fmean(
            abs(p / t.measured[0] - 1) for p, t in zip(time_s, rest, strict=True)
        )
        out["mape_power"] = statistics.fmean(
            abs(p / t.measured[1] - 1) for p, t in zip(power_w, rest, strict=True)
        )
    return out


_TABLES: dict[str, ReplayTable] = {}


def _init() -> None:
    _TABLES.update(groups())


def _pct(x: float) -> str:
    return "none" if math.isinf(x) else f"{100 * x:.1f}"


def ks(trials: int) -> tuple[int, ...]:
    """The profile counts the gap is reported after."""
    return (*(k for k in KS if k < trials), trials)


def evaluate(
    strategies: Sequence[str],
    seeds: int,
    only: Sequence[str] = (),
    workers: int = 2,
    trials: int = TRIALS,
    noise: float = 0.0,
) -> list[dict[str, Any]]:
    tables = groups()
    todo = [c for c in cases(tables) if not only or any(o in c.group for o in only)]
    jobs = [
        (c.group, c.objective, s, seed, trials, noise)
        for c in todo
        for s in strategies
        for seed in range(seeds)
    ]
    with ProcessPoolExecutor(workers, initializer=_init) as pool:
        results = list(pool.map(_job, jobs, chunksize=4))
    rows = []
    for c in todo:
        for s in strategies:
            mine = [
                r
                for (g, o, st, *_), r in zip(jobs, results, strict=True)
                if g == c.group and o == c.objective and st == s
            ]
            row: dict[str, Any] = {
                "group": c.group,
                "objective": c.objective.describe(),
                "strategy": s,
                "trials": trials,
            }
            for k in ks(trials):
                gaps = sorted(r["gaps"][k] for r in mine)
                row[f"median@{k}"] = statistics.median(gaps)
                row[f"worst@{k}"] = gaps[-1]
            row["over_budget"] = sum(r["over_budget"] for r in mine)
            row["over_target"] = sum(r["gaps"][trials] > worst_target(c.objective) for r in mine)
            row["profiles"] = statistics.median(r["profiles"] for r in mine)
            if s.startswith("auto"):
                row["mape_time"] = statistics.median(r["mape_time"] for r in mine)
                row["mape_power"] = statistics.median(r["mape_power"] for r in mine)
            rows.append(row)
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    trials = rows[0]["trials"] if rows else TRIALS
    head = (
        "| group | objective | strategy | "
        + " | ".join(f"@{k} med / worst %" for k in ks(trials))
        + " |"
    )
    lines = [head, "|" + "---|" * (3 + len(ks(trials)))]
    for r in rows:
        cells = [f"{_pct(r[f'median@{k}'])} / {_pct(r[f'worst@{k}'])}" for k in ks(trials)]
        name = (
            r["strategy"]
            if r["over_budget"] == 0
            else f"{r['strategy']} (OVER BUDGET x{r['over_budget']})"
        )
        lines.append(f"| {r['group']} | {r['objective']} | {name} | " + " | ".join(cells) + " |")
    mape = [r for r in rows if "mape_time" in r and r["objective"] == "min-energy"]
    if mape:
        lines += [
            "",
            f"auto predictor after {trials} profiles, MAPE on the unprofiled points "
            "(median over seeds):",
            "",
        ]
        lines += ["| group | strategy | time MAPE % | power MAPE % |", "|---|---|---|---|"]
        lines += [
            f"| {r['group']} | {r['strategy']} | {100 * r['mape_time']:.1f} | "
            f"{100 * r['mape_power']:.1f} |"
            for r in mape
        ]
    return "\n".join(lines)


def compact(rows: Sequence[dict[str, Any]]) -> str:
    """One line per case: every strategy's gap after all its profiles (median / worst %)."""
    k = rows[0]["trials"] if rows else TRIALS
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    lines = [
        "| group | objective | " + " | ".join(strategies) + " |",
        "|" + "---|" * (2 + len(strategies)),
    ]
    cases = list(dict.fromkeys((r["group"], r["objective"]) for r in rows))
    for group, objective in cases:
        cells = []
        for s in strategies:
            (r,) = [
                x
                for x in rows
                if (x["group"], x["objective"], x["strategy"]) == (group, objective, s)
            ]
            over = f" OVER x{r['over_budget']}" if r["over_budget"] else ""
            cells.append(
                f"{_pct(r[f'median@{k}'])} / {_pct(r[f'worst@{k}'])} [{r['over_target']}]{over}"
            )
        lines.append(f"| {group} | {objective} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--seeds", type=int, default=SEEDS)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--only", action="append", default=[], help="groups whose name contains this")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--trials", type=int, default=TRIALS, help="profiles per search")
    p.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="replay each seed on the table with time and power times exp(N(0, NOISE))",
    )
    args = p.parse_args(argv)
    if args.trials < 1:
        p.error(f"--trials must be at least 1, got {args.trials}")
    if not 0 <= args.noise < 1:
        p.error(f"--noise must be a standard deviation in [0, 1), got {args.noise}")
    rows = evaluate(
        args.strategies.split(","), args.seeds, args.only, args.workers, args.trials, args.noise
    )
    noisy = f", each seed on the table with {100 * args.noise:g} % noise" if args.noise else ""
    print(
        f"Gap to the optimum after {args.trials} profiles, "
        f"median / worst over {args.seeds} seeds (%){noisy}; "
        "seeds over the worst-case target (5 % min-energy, 10 % min-time) in brackets:"
    )
    print()
    print(compact(rows))
    print()
    print(markdown(rows))
    return 0


def test_search_quality(benchmark: Any) -> None:
    rows = benchmark.pedantic(evaluate, args=(STRATEGIES, SEEDS), rounds=1, iterations=1)
    print()
    print(compact(rows))
    print()
    print(markdown(rows))
    assert all(r["over_budget"] == 0 for r in rows)


if __name__ == "__main__":
    raise SystemExit(main())
