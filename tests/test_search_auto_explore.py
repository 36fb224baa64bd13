"""``auto``'s start on a 5-knob space: the half fraction of the two-level design.

The table has the interleaved workload's shape (cores x CPU x GPU x EMC clock x inference
batch; training throughput limited by the slowest of the CPU, GPU and memory sides, power
rising with cores x CPU clock): the fast points under a power budget lie on one line,
few cores at the top clocks. Optima are found by brute force over the same table.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from search_helpers import optimum, toy_table

from pytest_edgeenergy.search import Objective, Search, SearchResult, make_strategy
from pytest_edgeenergy.search.objective import THROUGHPUT
from pytest_edgeenergy.search.replay import ReplayOracle, ReplayTable, table_from_rows
from pytest_edgeenergy.search.space import Point, Space

CORES = (2, 4, 6)
CPU_HZ = (268_800_000, 576_000_000, 883_200_000, 1_190_400_000, 1_510_400_000)
GPU_HZ = (306_000_000, 510_000_000, 624_750_000)
EMC_HZ = (665_600_000, 2_133_000_000)
BATCH = (1, 2, 4, 8)
OBJECTIVE = Objective("max-train-throughput", power_budget_w=8.5, latency_budget_s=0.6)


def five_knob_rows() -> list[dict[str, Any]]:
    rows = []
    for n, cpu, gpu, emc, b in itertools.product(CORES, CPU_HZ, GPU_HZ, EMC_HZ, BATCH):
        c, g, m = cpu / 1e9, gpu / 1e9, emc / 1e9
        step_s = max(0.12 / (c * n**0.5), 0.08 / g, 0.35 / m) + 0.02 * b
        power_w = 5.0 + 0.45 * n * c**2 + 2.5 * g * m**0.5 + 0.1 * b
        rows.append(
            {
                "cpu_cores": n,
                "cpu_freq_hz": cpu,
                "gpu_freq_hz": gpu,
                "emc_freq_hz": emc,
                "batch_size": b,
                "train_minibatches_per_s": 1.0 / step_s,
                "latency_p99_s": step_s + 0.05 * b,
                "power_w": power_w,
            }
        )
    return rows


def five_knob_table() -> ReplayTable:
    return table_from_rows(five_knob_rows(), "five")


def half_fraction(space: Space) -> set[tuple[object, ...]]:
    """The corners whose coded levels (-1 lowest, +1 highest) multiply to +1."""
    ends = [(d.values[0], d.values[-1]) for d in space.dims]
    return {
        corner
        for corner in itertools.product(*ends)
        if math.prod(1 if v == end[1] else -1 for v, end in zip(corner, ends, strict=True)) == 1
    }


def first_points(
    table: ReplayTable, objective: Objective, *, trials: int, k: int, seed: int = 0
) -> tuple[set[Point], SearchResult]:
    chosen = make_strategy("auto", table.space, objective, seed=seed, trials=trials)
    result = Search(table.space, objective, chosen).run(ReplayOracle(table), k)
    return {table.space.point(t.knobs) for t in result.trials}, result


@pytest.mark.parametrize("seed", [0, 3])
def test_five_knobs_start_with_the_half_fraction_of_the_extremes(seed: int) -> None:
    table = five_knob_table()
    half = half_fraction(table.space)
    assert len(half) == 16
    profiled, _ = first_points(table, OBJECTIVE, trials=30, k=16, seed=seed)
    assert profiled == half
    top = tuple(d.values[-1] for d in table.space.dims)
    bottom = tuple(d.values[0] for d in table.space.dims)
    assert top in profiled and bottom not in profiled  # 5 lows multiply to -1


def test_the_half_fraction_is_skipped_when_it_would_take_most_trials() -> None:
    """16 corners in a 20-trial search would leave the model 4: a space-filling start."""
    table = five_knob_table()
    profiled, _ = first_points(table, OBJECTIVE, trials=20, k=8)
    assert len(profiled) == 8 and not profiled <= half_fraction(table.space)


@pytest.mark.parametrize("constant_batch", [False, True])
def test_four_knobs_never_use_a_half_fraction(constant_batch: bool) -> None:
    """With 4 varied knobs a half fraction mixes two-knob interactions: space-filling
    instead (a knob with one value does not count)."""
    rows = [r for r in five_knob_rows() if r["batch_size"] == 1]
    if not constant_batch:
        rows = [{k: v for k, v in r.items() if k != "batch_size"} for r in rows]
    table = table_from_rows(rows, "four")
    assert len(table.space.dims) == (5 if constant_batch else 4)
    profiled, _ = first_points(table, OBJECTIVE, trials=20, k=8)  # 16 corners do not fit
    assert len(profiled) == 8 and not profiled <= half_fraction(table.space)


def test_three_knob_start_is_unchanged() -> None:
    """Fewer than 5 knobs: the full design when it fits, as before."""
    table = toy_table(cores=True)
    objective = Objective("min-time", power_budget_w=7.0)
    profiled, result = first_points(table, objective, trials=10, k=8)
    assert len(profiled) == 8 and result.best is not None
    full = set(itertools.product(*((d.values[0], d.values[-1]) for d in table.space.dims)))
    assert profiled != full and not profiled <= half_fraction(table.space)
    more, _ = first_points(table, objective, trials=16, k=16)
    assert full <= more and optimum(table, objective).knobs in [table.space.knobs(p) for p in more]


@pytest.mark.parametrize("seed", range(4))
def test_finds_the_fast_line_under_both_budgets_in_30_profiles(seed: int) -> None:
    table = five_knob_table()
    best_possible = max(
        t.metrics[THROUGHPUT] for t in table.trials if OBJECTIVE.feasible(*t.measured, t.metrics)
    )
    _, result = first_points(table, OBJECTIVE, trials=30, k=30, seed=seed)
    assert result.best is not None
    assert OBJECTIVE.feasible(*result.best.measured, result.best.metrics)
    assert result.best.metrics[THROUGHPUT] >= 0.9 * best_possible


def test_resumed_search_proposes_what_an_unbroken_one_does() -> None:
    """``propose`` is a function of seed and history: stopping inside the half fraction
    and resuming with a fresh strategy gives the same trials."""
    table = five_knob_table()
    _, whole = first_points(table, OBJECTIVE, trials=30, k=22, seed=2)
    _, first = first_points(table, OBJECTIVE, trials=30, k=9, seed=2)
    again = make_strategy("auto", table.space, OBJECTIVE, seed=2, trials=30)
    resumed = Search(table.space, OBJECTIVE, again, first.trials).run(ReplayOracle(table), 22)
    assert [t.knobs for t in resumed.trials] == [t.knobs for t in whole.trials]
