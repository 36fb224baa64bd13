"""Search strategies on small replay tables whose optima are known by brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from search_helpers import optimum, toy_table

from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.search import Objective, PointFailed, Search, Trial, make_strategy
from pytest_edgeenergy.search.driver import StrategyError, pareto_front
from pytest_edgeenergy.search.replay import ReplayOracle, table_from_rows
from pytest_edgeenergy.search.space import Knobs, Space
from pytest_edgeenergy.search.strategies.grid import fewest_change_order

ALL = ("grid", "random", "binary", "optuna", "auto")


def run(strategy: str, objective: Objective, trials: int, *, seed: int = 0, cores: bool = False):
    table = toy_table(cores=cores)
    chosen = make_strategy(strategy, table.space, objective, seed=seed)
    return table, Search(table.space, objective, chosen).run(ReplayOracle(table), trials)


def test_grid_profiles_every_point_changing_one_knob_at_a_time() -> None:
    table = toy_table(cores=True)
    order = fewest_change_order(table.space)
    assert sorted(order) == sorted(table.space.all_points())
    changes = [sum(a != b for a, b in zip(p, q, strict=True)) for p, q in itertools.pairwise(order)]
    assert changes == [1] * (len(order) - 1)
    _, result = run("grid", Objective("min-energy"), 10_000, cores=True)
    assert result.profiles == len(table.trials)
    assert result.best == optimum(table, Objective("min-energy"))


@pytest.mark.parametrize(
    "objective",
    [Objective("min-energy"), Objective("min-time", power_budget_w=7.0), Objective("min-edp")],
    ids=lambda o: o.describe(),
)
@pytest.mark.parametrize("strategy", ["binary", "auto"])
def test_model_and_binary_find_the_optimum_in_a_third_of_the_grid(
    strategy: str, objective: Objective
) -> None:
    table, result = run(strategy, objective, 16)
    assert result.profiles <= 16 < len(table.trials)
    assert result.best == optimum(table, objective)


def test_optuna_and_random_get_close_with_half_the_grid() -> None:
    objective = Objective("min-energy")
    for strategy in ("optuna", "random"):
        table, result = run(strategy, objective, 12)
        best = optimum(table, objective)
        assert result.best is not None
        assert result.best.energy_j <= best.energy_j * 1.25, strategy  # type: ignore[operator]


def test_min_energy_under_a_latency_budget_never_recommends_a_slow_point() -> None:
    objective = Objective("min-energy", latency_budget_s=0.26)
    table, result = run("auto", objective, 14)
    assert result.best is not None and result.best.time_s <= 0.26  # type: ignore[operator]
    assert result.best == optimum(table, objective)
    # The unconstrained energy optimum is slower than the budget: the budget mattered.
    assert optimum(table, Objective("min-energy")).time_s > 0.26  # type: ignore[operator]


@pytest.mark.parametrize("strategy", ["grid", "random", "optuna", "auto"])
def test_pareto_front_is_the_measured_non_dominated_set(strategy: str) -> None:
    objective = Objective("pareto")
    table, result = run(strategy, objective, 14)
    measured = result.trials
    front = result.front
    assert front and set(map(id, front)) <= set(map(id, measured))
    for t in measured:
        dominated = any(
            f.time_s <= t.time_s and f.energy_j <= t.energy_j and f != t  # type: ignore[operator]
            for f in measured
        )
        assert (t in front) == (not dominated)
    full = pareto_front(table.trials, objective)
    assert len(full) >= len(front) >= 2


def test_binary_refuses_pareto() -> None:
    table = toy_table()
    with pytest.raises(InvalidValue, match=r"binary.*pareto"):
        make_strategy("binary", table.space, Objective("pareto"))


def test_unknown_names_say_what_is_allowed() -> None:
    table = toy_table()
    allowed = "allowed: auto, binary, grid, optuna, random"
    with pytest.raises(InvalidValue, match=f"unknown strategy 'bayes'; {allowed}"):
        make_strategy("bayes", table.space, Objective("min-energy"))
    with pytest.raises(InvalidValue, match="unknown objective 'fast'; allowed: min-energy"):
        Objective("fast")
    with pytest.raises(InvalidValue, match="power budget -3"):
        Objective("min-time", power_budget_w=-3)


@pytest.mark.parametrize("strategy", ALL)
def test_same_seed_same_trials_and_a_resumed_search_continues_identically(strategy: str) -> None:
    objective = Objective("min-time", power_budget_w=7.5)
    table, whole = run(strategy, objective, 12, seed=3)
    _, again = run(strategy, objective, 12, seed=3)
    assert whole.trials == again.trials
    first = Search(
        table.space, objective, make_strategy(strategy, table.space, objective, seed=3)
    ).run(ReplayOracle(table), 5)
    resumed = Search(
        table.space,
        objective,
        make_strategy(strategy, table.space, objective, seed=3),
        history=[Trial.from_json(t.to_json()) for t in first.trials],
    ).run(ReplayOracle(table), 12)
    assert resumed.trials == whole.trials


class FlakyOracle(ReplayOracle):
    """The replay, except points at the highest GPU clock fail (say, out of memory)."""

    def measure(self, knobs: Knobs) -> Trial:
        if knobs["gpu_freq_hz"] == max(t.knobs["gpu_freq_hz"] for t in self.table.trials):
            raise PointFailed("out of memory at this clock")
        return super().measure(knobs)


@pytest.mark.parametrize("strategy", ALL)
def test_a_point_that_cannot_run_is_a_failed_trial_not_a_crash(strategy: str) -> None:
    objective = Objective("min-time")
    table = toy_table()
    chosen = make_strategy(strategy, table.space, objective, seed=1)
    result = Search(table.space, objective, chosen).run(FlakyOracle(table), 24)
    failed = [t for t in result.trials if not t.ok]
    assert all(t.failed == "out of memory at this clock" for t in failed)
    assert result.best is not None and result.best.ok
    assert result.best.knobs["gpu_freq_hz"] != 816_000_000
    if strategy in ("binary", "auto"):  # learns: the next clock down is the fastest that runs
        assert result.best.knobs["gpu_freq_hz"] == 714_000_000


def test_trials_must_be_positive() -> None:
    table = toy_table()
    search = Search(
        table.space,
        Objective("min-energy"),
        make_strategy("grid", table.space, Objective("min-energy")),
    )
    with pytest.raises(InvalidValue, match="trials 0: must be at least 1"):
        search.run(ReplayOracle(table), 0)


# Random small tables: whatever the numbers, the contract holds for every strategy.
_value = st.floats(0.5, 20.0, allow_nan=False)


@st.composite
def tables(draw: st.DrawFn) -> list[dict[str, object]]:
    gpus = draw(st.lists(st.integers(1, 20), min_size=1, max_size=4, unique=True))
    batches = draw(st.lists(st.integers(1, 64), min_size=1, max_size=4, unique=True))
    rows = []
    for g in gpus:
        for b in batches:
            if draw(st.booleans()) or not rows:  # sparse: some combinations missing
                rows.append(
                    {
                        "gpu_freq_hz": g * 100_000_000,
                        "batch_size": b,
                        "time_s": draw(_value),
                        "power_w": draw(_value),
                    }
                )
    return rows


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=tables(),
    strategy=st.sampled_from(ALL),
    budget=st.one_of(st.none(), st.floats(0.5, 20.0)),
    trials=st.integers(1, 8),
)
def test_strategies_stay_in_the_space_never_repeat_and_recommend_a_profiled_feasible_point(
    rows: list[dict[str, object]], strategy: str, budget: float | None, trials: int
) -> None:
    table = table_from_rows(rows, "drawn")
    objective = Objective("min-time", power_budget_w=budget)
    chosen = make_strategy(strategy, table.space, objective, seed=7)
    # Search.propose raises AssertionError on a repeated or out-of-space proposal.
    result = Search(table.space, objective, chosen).run(ReplayOracle(table), trials)
    points = [tuple(sorted(t.knobs.items())) for t in result.trials]
    assert len(points) == len(set(points)) <= trials
    assert all(table.space.contains(table.space.point(t.knobs)) for t in result.trials)
    if result.best is not None:
        assert result.best in result.trials
        assert objective.feasible(*result.best.measured)
    else:
        assert not any(objective.feasible(*t.measured) for t in result.trials)


def _corners(space: Space) -> set[tuple[object, ...]]:
    return set(itertools.product(*((d.values[0], d.values[-1]) for d in space.dims)))


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_auto_starts_with_every_combination_of_the_knobs_extremes(seed: int) -> None:
    """Two values per knob (lowest, highest), every combination: 2^3 = 8 points first."""
    table = toy_table(cores=True)
    objective = Objective("min-time", power_budget_w=7.0)
    chosen = make_strategy("auto", table.space, objective, seed=seed, trials=16)
    result = Search(table.space, objective, chosen).run(ReplayOracle(table), 8)
    profiled = {table.space.point(t.knobs) for t in result.trials}
    assert profiled == _corners(table.space)
    more = Search(table.space, objective, chosen, result.trials).run(ReplayOracle(table), 16)
    assert more.best == optimum(table, objective)  # then the model finds the edge


def test_auto_spreads_its_first_points_when_the_extremes_would_take_most_trials() -> None:
    """8 corners in a 10-trial search would leave the model 2: a space-filling start."""
    table = toy_table(cores=True)
    objective = Objective("min-energy")
    chosen = make_strategy("auto", table.space, objective, seed=0, trials=10)
    result = Search(table.space, objective, chosen).run(ReplayOracle(table), 8)
    profiled = {table.space.point(t.knobs) for t in result.trials}
    assert len(profiled) == 8 and profiled != _corners(table.space)


class _Stubborn:
    """A strategy that breaks its contract: it proposes its one point forever."""

    name = "stubborn"

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs

    def propose(self, history: object) -> Knobs | None:
        return dict(self.knobs)


def test_a_strategy_proposing_a_point_again_or_outside_is_named() -> None:
    table = toy_table()
    objective = Objective("min-energy")
    first = table.trials[0].knobs
    search = Search(table.space, objective, _Stubborn(first))
    with pytest.raises(StrategyError, match=r"strategy 'stubborn' proposed .* again"):
        search.run(ReplayOracle(table), 3)
    assert len(search.trials) == 1  # the first proposal was measured
    outside = {**first, **{k: -1 for k in list(first)[:1]}}
    with pytest.raises(InvalidValue, match="is not in the search space; allowed"):
        Search(table.space, objective, _Stubborn(outside)).run(ReplayOracle(table), 1)
