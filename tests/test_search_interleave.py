"""``max-train-throughput``: the interleaved workload's objective, in every strategy, the
replay and the CLI, and the live trial read from a test's ``extra["interleave"]``."""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.run.records import TestEnergy as Record
from pytest_edgeenergy.run.search import interleave_trial, measured_trial
from pytest_edgeenergy.search import Objective, Search, Trial, best, make_strategy, rank
from pytest_edgeenergy.search.offline import run_replay
from pytest_edgeenergy.search.replay import (
    ReplayError,
    ReplayOracle,
    read_csv,
    read_replay,
    table_from_rows,
)
from pytest_edgeenergy.search.space import Knobs

GPU_HZ = (306_000_000, 510_000_000, 624_750_000)
CORES = (2, 4)
BATCHES = (1, 2, 4, 8)
RATE_QPS = 2.0
LATENCY_BUDGET_S = 2.0
POWER_BUDGET_W = 10.0


def interleave_rows() -> list[dict[str, Any]]:
    """A small interleaved table with the alternating scheduler's shape: a bigger batch
    leaves more of each period to training but waits longer to fill."""
    rows = []
    for gpu, cores, batch in itertools.product(GPU_HZ, CORES, BATCHES):
        slow = GPU_HZ[-1] / gpu
        train_s = 0.2 * slow * (1.2 if cores == 2 else 1.0)
        infer_s = 0.05 * batch**0.8 * slow
        period_s = batch / RATE_QPS
        rows.append(
            {
                "gpu_freq_hz": gpu,
                "cpu_cores": cores,
                "batch_size": batch,
                "train_minibatches_per_s": (period_s - infer_s) / (period_s * train_s),
                "latency_p99_s": (batch - 1) / RATE_QPS + train_s + infer_s,
                "power_w": 4.0 + 8.0 / slow + 0.6 * cores + 0.2 * math.log2(batch),
                "note": "ignored",
            }
        )
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        f.write("# an interleaved table\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


OBJECTIVE = Objective("max-train-throughput", POWER_BUDGET_W, LATENCY_BUDGET_S)


def trial(throughput: float, p99_s: float, power_w: float, time_s: float = 1.0) -> Trial:
    return Trial(
        knobs={"batch_size": 1},
        time_s=time_s,
        power_w=power_w,
        metrics={"train_minibatches_per_s": throughput, "latency_p99_s": p99_s},
    )


# -- the objective -------------------------------------------------------------------------

positive = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)


@given(throughput=positive, p99_s=positive, power_w=positive, time_s=positive)
def test_feasible_iff_both_budgets_met(
    throughput: float, p99_s: float, power_w: float, time_s: float
) -> None:
    t = trial(throughput, p99_s, power_w, time_s)
    met = power_w <= POWER_BUDGET_W and p99_s <= LATENCY_BUDGET_S
    assert OBJECTIVE.feasible(*t.measured, t.metrics) is met
    assert (rank(t, OBJECTIVE)[0] == 0) is met
    assert (OBJECTIVE.violation(*t.measured, t.metrics) == 0) is met
    # The time per unit of work is not what the latency budget bounds here.
    assert OBJECTIVE.value(*t.measured, t.metrics) == -throughput


@given(st.lists(st.tuples(positive, positive, positive), min_size=1, max_size=12))
def test_rank_orders_feasible_by_throughput_descending(
    figures: list[tuple[float, float, float]],
) -> None:
    trials = [trial(*f) for f in figures]
    ordered = sorted(trials, key=lambda t: rank(t, OBJECTIVE))
    feasible = [t for t in ordered if OBJECTIVE.feasible(*t.measured, t.metrics)]
    assert ordered[: len(feasible)] == feasible  # every feasible one first
    speeds = [t.metrics["train_minibatches_per_s"] for t in feasible]
    assert speeds == sorted(speeds, reverse=True)
    chosen = best(trials, OBJECTIVE)
    assert (chosen is None) is (not feasible)
    if chosen is not None:
        assert chosen.metrics["train_minibatches_per_s"] == max(speeds)


def test_a_trial_without_the_metrics_cannot_be_judged() -> None:
    bare = Trial(knobs={"batch_size": 1}, time_s=0.1, power_w=5.0)
    assert rank(bare, OBJECTIVE) == (2, math.inf)
    assert OBJECTIVE.missing(bare.metrics) == ["train_minibatches_per_s", "latency_p99_s"]
    with pytest.raises(InvalidValue, match="max-train-throughput needs the metric latency_p99_s"):
        OBJECTIVE.feasible(0.1, 5.0, {"train_minibatches_per_s": 2.0})
    assert "inference latency p99 <= 2 s" in OBJECTIVE.describe()


def test_other_objectives_ignore_the_metrics() -> None:
    objective = Objective("min-time", latency_budget_s=0.5)
    fast = trial(throughput=0.1, p99_s=99.0, power_w=5.0, time_s=0.4)
    assert objective.needs == ()
    assert objective.feasible(*fast.measured, fast.metrics)
    assert rank(fast, objective) == (0, 0.4)


def test_metrics_survive_json_and_must_be_numbers() -> None:
    t = trial(2.5, 0.8, 7.0)
    assert Trial.from_json(t.to_json()).metrics == t.metrics
    assert "metrics" not in Trial(knobs={}, time_s=1.0, power_w=1.0).to_json()
    with pytest.raises(ValueError, match="metric latency_p99_s -1"):
        Trial(knobs={}, time_s=1.0, power_w=1.0, metrics={"latency_p99_s": -1.0})


# -- every strategy --------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["grid", "random", "binary", "optuna", "auto"])
def test_each_strategy_finds_a_feasible_point_never_twice(strategy: str) -> None:
    table = table_from_rows(interleave_rows(), "interleave")
    trials = 16
    chosen = make_strategy(strategy, table.space, OBJECTIVE, seed=3, trials=trials)
    oracle = ReplayOracle(table)
    # Search.propose raises StrategyError on a repeat or a point outside the space.
    result = Search(table.space, OBJECTIVE, chosen).run(oracle, trials)
    points = [tuple(sorted(t.knobs.items())) for t in result.trials]
    assert len(points) == len(set(points)) == oracle.calls
    assert result.best is not None
    assert OBJECTIVE.feasible(*result.best.measured, result.best.metrics)
    assert set(result.best.metrics) == {"train_minibatches_per_s", "latency_p99_s"}
    found = result.best.metrics["train_minibatches_per_s"]
    assert found == max(
        t.metrics["train_minibatches_per_s"]
        for t in result.trials
        if OBJECTIVE.feasible(*t.measured, t.metrics)
    )


def test_the_full_grid_finds_the_table_optimum() -> None:
    table = table_from_rows(interleave_rows(), "interleave")
    result = run_replay(table, OBJECTIVE, "grid", len(table.trials))
    ok = [t for t in table.trials if OBJECTIVE.feasible(*t.measured, t.metrics)]
    assert result.best is not None
    assert result.best.metrics["train_minibatches_per_s"] == max(
        t.metrics["train_minibatches_per_s"] for t in ok
    )


# -- replay tables ---------------------------------------------------------------------------


def test_time_per_minibatch_comes_from_the_throughput(tmp_path: Path) -> None:
    table = read_csv(write_csv(tmp_path / "t.csv", interleave_rows()))
    assert table.space.names == ("cpu_cores", "gpu_freq_hz", "batch_size")
    for t in table.trials:
        assert t.measured[0] == pytest.approx(1 / t.metrics["train_minibatches_per_s"])


@pytest.mark.parametrize("dropped", ["latency_p99_s", "train_minibatches_per_s"])
def test_a_missing_column_is_named_with_the_objective(
    tmp_path: Path, dropped: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{k: v for k, v in r.items() if k != dropped} for r in interleave_rows()]
    if dropped == "train_minibatches_per_s":
        for r in rows:
            r["time_s"] = 0.5  # an ordinary table: it replays, but cannot serve the objective
    path = write_csv(tmp_path / "t.csv", rows)
    code = main(
        [
            "search",
            "--replay",
            str(path),
            "--objective",
            "max-train-throughput",
            "--trials",
            "5",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("edgeenergy: ")
    assert f"objective max-train-throughput needs column {dropped}" in err
    assert str(path) in err


def test_throughput_without_power_is_refused(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "power_w"} for r in interleave_rows()]
    with pytest.raises(ReplayError, match="needs column power_w with train_minibatches_per_s"):
        read_csv(write_csv(tmp_path / "t.csv", rows))


def test_a_budget_no_point_meets_names_the_lowest_p99(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_csv(tmp_path / "t.csv", interleave_rows())
    code = main(
        [
            *("search", "--replay", str(path), "--objective", "max-train-throughput"),
            *("--latency-budget-s", "0.01", "--trials", "5"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "no operating point meets 0.01 s; the lowest inference latency p99 measured" in err


# -- the CLI end to end ----------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["auto", "binary"])
def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str) -> None:
    path = write_csv(tmp_path / "t.csv", interleave_rows())
    code = main(
        [
            "search",
            "--replay",
            str(path),
            "--objective",
            "max-train-throughput",
            "--latency-budget-s",
            str(LATENCY_BUDGET_S),
            "--power-budget-w",
            str(POWER_BUDGET_W),
            "--trials",
            "14",
            "--strategy",
            strategy,
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["objective"] == "max-train-throughput"
    assert data["latency_budget_s"] == LATENCY_BUDGET_S
    assert data["power_budget_w"] == POWER_BUDGET_W
    best_point = data["best"]
    assert best_point["metrics"]["latency_p99_s"] <= LATENCY_BUDGET_S
    assert best_point["power_w"] <= POWER_BUDGET_W
    assert best_point["time_s"] == pytest.approx(
        1 / best_point["metrics"]["train_minibatches_per_s"]
    )
    feasible = [t for t in data["trials"] if t["feasible"]]
    assert (
        max(t["metrics"]["train_minibatches_per_s"] for t in feasible)
        == (best_point["metrics"]["train_minibatches_per_s"])
    )
    for t in data["trials"]:
        over = t["metrics"]["latency_p99_s"] > LATENCY_BUDGET_S or t["power_w"] > POWER_BUDGET_W
        assert t["feasible"] is not over


def test_cli_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_csv(tmp_path / "t.csv", interleave_rows())
    code = main(
        [
            *("search", "--replay", str(path), "--objective", "max-train-throughput"),
            *("--latency-budget-s", "2", "--trials", "6", "--strategy", "random"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(
        "strategy random, objective max-train-throughput, inference latency p99 <= 2 s: "
        "6 of 24 points profiled"
    )
    assert "minibatch/s  p99 " in out.splitlines()[1]


# -- live: a searched test's record becomes a trial -------------------------------------------

FIGURES = {
    "scheduler": "alternating",
    "train_minibatches_per_s": 3.5,
    "latency_p99_s": 0.09,
    "power_w": 6.25,
    "energy_per_train_minibatch_j": 1.1,
}


def test_interleave_trial_reads_the_contract_fields() -> None:
    knobs: Knobs = {"gpu_freq_hz": 510_000_000, "batch_size": 4}
    t = interleave_trial(knobs, {"interleave": FIGURES}, OBJECTIVE, 10.0, 7.0)
    assert t.ok and t.knobs == knobs
    assert t.metrics == {"train_minibatches_per_s": 3.5, "latency_p99_s": 0.09}
    assert t.power_w == 6.25  # the workload's own figure over the window's
    assert t.time_s == pytest.approx(1 / 3.5)
    assert rank(t, OBJECTIVE) == (0, -3.5)


def test_no_training_minibatch_is_infeasible_not_a_crash() -> None:
    figures = {**FIGURES, "train_minibatches_per_s": 0.0}
    t = interleave_trial({"batch_size": 1}, {"interleave": figures}, OBJECTIVE, 10.0, 7.0)
    assert t.ok and t.time_s == 10.0
    assert t.infeasible == "no training minibatch finished in the window"
    assert rank(t, OBJECTIVE)[0] == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "objective max-train-throughput needs an interleaved test"),
        (
            {"interleave": {k: v for k, v in FIGURES.items() if k != "latency_p99_s"}},
            'objective max-train-throughput needs extra["interleave"]["latency_p99_s"]',
        ),
        (
            {"interleave": {**FIGURES, "train_minibatches_per_s": "fast"}},
            'needs extra["interleave"]["train_minibatches_per_s"]',
        ),
    ],
)
def test_a_test_without_the_fields_is_a_failed_trial(extra: dict[str, Any], message: str) -> None:
    t = interleave_trial({"batch_size": 1}, extra, OBJECTIVE, 10.0, 7.0)
    assert not t.ok
    assert t.failed is not None and message in t.failed


def test_a_failed_test_stays_failed_under_the_objective() -> None:
    rec = Record("suites/test_interleave.py::test_x", status="failed", reason="boom")
    rec.extra["interleave"] = dict(FIGURES)
    t = measured_trial({"batch_size": 1}, rec, (), objective=OBJECTIVE)
    assert t.failed == "test failed: boom"


LIVE = """
import time


def test_interleaved(operating_point, edge_bench, batch_size):
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    edge_bench.run(lambda: time.sleep(0.002), items_per_call=batch_size)
    # The figures an interleaved workload notes (suites/test_interleave.py): faster training
    # at a higher GPU clock, a longer wait for a bigger inference batch.
    edge_bench.note(
        "interleave",
        {
            "train_minibatches_per_s": gpu_hz / 1e8,
            "latency_p99_s": 0.05 * batch_size,
            "power_w": 4.0 + gpu_hz / 1e9,
        },
    )
"""

NOT_INTERLEAVED = """
import time


def test_plain(operating_point, edge_bench, batch_size):
    edge_bench.run(lambda: time.sleep(0.002), items_per_call=batch_size)
"""

LIVE_ARGS = (
    "--edge-board=sim:orin-nano",
    "--edge-idle-s=0",
    "--edge-quick",
    "-p",
    "no:cacheprovider",
    "--edge-search=grid",
    "--edge-trials=4",
    "--gpu-freq=min,max",
    "--batch-size=1,4",
    "--edge-objective=max-train-throughput",
    "--edge-latency-budget-s=0.1",
)


def test_live_search_reads_the_interleaved_figures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=LIVE)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(*LIVE_ARGS, f"--edge-report={report}", timeout=240)
    result.assert_outcomes(passed=5)  # the dvfs reference and 4 trials
    result.stdout.fnmatch_lines(
        ["*objective max-train-throughput, inference latency p99 <= 0.1 s*", "*best: *"]
    )
    (search,) = json.loads(report.read_text())["search"]
    assert search["objective"] == "max-train-throughput"
    for t in search["trials"]:
        knobs = t["knobs"]
        assert t["metrics"] == {
            "train_minibatches_per_s": pytest.approx(knobs["gpu_freq_hz"] / 1e8),
            "latency_p99_s": pytest.approx(0.05 * knobs["batch_size"]),
        }
        assert t["power_w"] == pytest.approx(4.0 + knobs["gpu_freq_hz"] / 1e9)
        assert t["feasible"] is (knobs["batch_size"] == 1)
        assert t["value"] == pytest.approx(-knobs["gpu_freq_hz"] / 1e8)
    top = max(search["space"]["gpu_freq_hz"])
    assert search["best"]["knobs"] == {"gpu_freq_hz": top, "batch_size": 1}


def test_live_search_of_a_test_without_the_figures_fails_its_trials(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_inner=NOT_INTERLEAVED)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(*LIVE_ARGS, f"--edge-report={report}", timeout=240)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*best: no profiled point met the objective's budgets*"])
    (search,) = json.loads(report.read_text())["search"]
    assert search["best"] is None
    for t in search["trials"]:
        assert t["failed"].startswith("objective max-train-throughput needs an interleaved test")


def test_a_sweeps_report_replays_with_the_objective(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(test_inner=LIVE)
    report = pytester.path / "r.json"
    sweep = [a for a in LIVE_ARGS if not a.startswith(("--edge-search", "--edge-trials"))]
    sweep = [a for a in sweep if not a.startswith(("--edge-objective", "--edge-latency"))]
    result = pytester.runpytest_subprocess(*sweep, f"--edge-report={report}", timeout=240)
    result.assert_outcomes(passed=4)  # gpu min, max x batch 1, 4
    table = read_replay(report)
    assert len(table.trials) == 4
    for t in table.trials:
        assert t.metrics["latency_p99_s"] == pytest.approx(0.05 * int(t.knobs["batch_size"]))
        assert t.measured[0] == pytest.approx(1 / t.metrics["train_minibatches_per_s"])
    capsys.readouterr()  # the child run's own lines
    code = main(
        [
            *("search", "--replay", str(report), "--objective", "max-train-throughput"),
            *("--latency-budget-s", "0.1", "--trials", "4", "--strategy", "grid", "--json"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["best"]["knobs"]["batch_size"] == 1
    assert data["best"]["knobs"]["gpu_freq_hz"] == max(
        int(t.knobs["gpu_freq_hz"]) for t in table.trials
    )
