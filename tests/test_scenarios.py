"""Load scenarios: their parameters, arrival schedules, query planning and the schedule loop."""

from __future__ import annotations

import itertools
import math
import time
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.bench.scenarios import (
    SCENARIOS,
    Scenario,
    arrivals_s,
    plan_queries,
    run_schedule,
    schedule_metrics,
)
from pytest_edgeenergy.bench.settings import LATENCY_BOUND_S, RATE_PER_S
from pytest_edgeenergy.errors import InvalidValue


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "batch"}, "unknown scenario 'batch'; allowed: offline, single-stream"),
        ({"name": "fixed-rate"}, "fixed-rate needs a rate"),
        ({"name": "server", "rate_hz": 10.0}, "server needs a latency bound"),
        ({"name": "fixed-rate", "rate_hz": 0.0}, "rate 0.0: must be a positive number"),
        ({"name": "fixed-rate", "rate_hz": math.inf}, "rate inf: must be a positive"),
        ({"name": "single-stream", "latency_bound_s": -1.0}, "latency bound -1.0"),
    ],
)
def test_bad_scenarios_name_what_is_allowed(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidValue, match=message):
        Scenario(**kwargs)  # type: ignore[arg-type]


def test_deadline_and_params() -> None:
    assert Scenario().params() == {} and Scenario().deadline_s is None
    fixed = Scenario("fixed-rate", 30.0)
    assert fixed.deadline_s == pytest.approx(1 / 30)
    assert fixed.params() == {"scenario": "fixed-rate", "rate_hz": 30.0}
    assert Scenario("fixed-rate", 30.0, 0.1).deadline_s == 0.1
    assert Scenario("single-stream").deadline_s is None
    assert Scenario("server", 5.0, 0.2).params()["latency_bound_s"] == 0.2
    assert set(SCENARIOS) == {"offline", "single-stream", "fixed-rate", "server"}


def test_fixed_rate_arrivals_are_the_periods() -> None:
    assert arrivals_s(Scenario("fixed-rate", 4.0), 5) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert arrivals_s(Scenario("single-stream"), 5) is None
    assert arrivals_s(Scenario(), 5) is None


@settings(max_examples=25, deadline=None)
@given(rate=st.floats(0.5, 500.0), seed=st.integers(0, 2**31), repeat=st.integers(0, 50))
def test_server_arrivals_reproducible_poisson_at_the_mean_rate(
    rate: float, seed: int, repeat: int
) -> None:
    n = 4000
    scenario = Scenario("server", rate, 1.0, seed=seed)
    arrivals = arrivals_s(scenario, n, repeat)
    assert arrivals is not None and len(arrivals) == n and arrivals[0] == 0.0
    assert arrivals == arrivals_s(Scenario("server", rate, 1.0, seed=seed), n, repeat)
    assert arrivals != arrivals_s(scenario, n, repeat + 1)  # each repeat its own draw
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert all(g >= 0 for g in gaps)
    # Exponential gaps: mean 1/rate (standard error 1/(rate sqrt(n))), P(gap > mean) = 1/e.
    mean = sum(gaps) / len(gaps)
    assert abs(mean * rate - 1.0) < 6 / math.sqrt(len(gaps))
    over = sum(g > 1 / rate for g in gaps) / len(gaps)
    assert abs(over - math.exp(-1)) < 6 * math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / len(gaps))


def test_plan_queries_fills_the_minimum_window_at_the_rate() -> None:
    fixed = Scenario("fixed-rate", 30.0)
    assert plan_queries(fixed, 60, 0.5) == (60, None)  # 2 s of schedule already
    n, why = plan_queries(fixed, 2, 0.5)
    assert n == 15 and why is not None and "15 queries per repeat" in why
    assert plan_queries(fixed, 2, 0.5, calibrate=False) == (2, None)


def test_slow_queries_miss_the_period_and_queue() -> None:
    rate = 50.0
    lat: array[float] = array("d")
    sched = run_schedule(Scenario("fixed-rate", rate), lambda: time.sleep(1.5 / rate), 6, lat)
    assert sched.misses == 6 and sched.miss_fraction == 1.0 and sched.met is False
    # Each query waits for the previous one: latencies grow along the queue.
    assert list(lat) == sorted(lat) and lat[-1] > lat[0] + 2 * 0.5 / rate
    assert sched.span_s >= 6 * 1.5 / rate  # the window runs to the last completion


def test_fast_queries_meet_the_period_and_leave_idle_time() -> None:
    rate = 10.0
    lat: array[float] = array("d")
    sched = run_schedule(Scenario("fixed-rate", rate), lambda: None, 4, lat)
    assert sched.misses == 0 and sched.met is True and len(lat) == 4
    assert sched.span_s == pytest.approx(4 / rate)  # to the end of the last period
    assert sched.idle_fraction is not None and sched.idle_fraction > 0.5
    metrics = schedule_metrics([sched, None])
    assert metrics["deadline_misses"]["value"] == 0
    assert metrics["deadline_misses"]["unit"] == "queries"
    assert set(metrics) == {"idle_fraction", "deadline_misses", "deadline_miss_fraction"}


def test_single_stream_without_bound_has_no_deadline() -> None:
    lat: array[float] = array("d")
    sched = run_schedule(Scenario("single-stream"), lambda: time.sleep(0.002), 5, lat)
    assert sched.misses is None and sched.met is None and len(lat) == 5
    assert min(lat) >= 0.002  # latency is the query's own time (issued at the previous end)
    assert schedule_metrics([sched]).keys() == {"idle_fraction"}


def test_report_keys_separate_scenarios_and_keep_offline_keys() -> None:
    from pytest_edgeenergy.report.keys import join_key

    base = {"workload": "mobilenet_v2", "batch_size": 1, "device": "cpu"}

    def key(scenario: Scenario) -> object:
        return join_key({"id": "suites/t.py::test_x", "params": {**base, **scenario.params()}})

    offline = join_key({"id": "suites/t.py::test_x", "params": base})
    assert key(Scenario()) == offline  # an offline result matches reports made before
    keys = {
        key(s)
        for s in (
            Scenario(),
            Scenario("single-stream"),
            Scenario("fixed-rate", 30.0),
            Scenario("fixed-rate", 15.0),
            Scenario("fixed-rate", 30.0, 0.1),
            Scenario("server", 30.0, 0.1),
        )
    }
    assert len(keys) == 6


RATE_FROM = "--edge-rate (command line)"


def _parse(name: str, rate: str | None, bound: str | None = None) -> Scenario:
    from pytest_edgeenergy.plugin.options import Value, parse_scenario

    return parse_scenario(
        Value(name, "EDGEENERGY_SCENARIO (environment)"),
        Value(rate, RATE_FROM) if rate is not None else None,
        Value(bound, "edge_latency_bound_s (ini file)") if bound is not None else None,
    )


@given(
    rate=st.floats(RATE_PER_S.low, RATE_PER_S.high),
    bound=st.none() | st.floats(1e-6, LATENCY_BOUND_S.high),
)
def test_rates_and_bounds_round_trip_through_the_options(rate: float, bound: float | None) -> None:
    s = _parse(" Fixed-Rate ", repr(rate), None if bound is None else repr(bound))
    assert (s.name, s.rate_hz, s.latency_bound_s) == ("fixed-rate", rate, bound)
    assert s.deadline_s == (bound if bound is not None else 1 / rate)


@given(
    text=st.floats(max_value=0.0).map(repr)
    | st.sampled_from(["nan", "inf", "-inf", "", "30/s", "thirty"])
)
def test_a_rate_that_is_not_a_positive_number_names_the_option(text: str) -> None:
    from pytest_edgeenergy.plugin.options import SettingsError

    with pytest.raises(SettingsError, match=r"^--edge-rate \(command line\): ") as info:
        _parse("server", text, "0.1")
    assert "queries per second" in str(info.value)
