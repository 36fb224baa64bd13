"""Properties of the integration functions (pure, no threads)."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_edgeenergy.meters.integrate import (
    IntegrationError,
    counter_energy_between,
    counter_peak_power_between,
    energy_between,
    index_range,
    interpolate_at,
    interval_stats,
    mean_power_between,
    peak_between,
)

# Timestamps on a 1 ms grid: distinct, sorted, like a sampler's monotonic stamps.
times = st.lists(st.integers(0, 20_000), min_size=1, max_size=60, unique=True).map(
    lambda xs: [x * 1e-3 for x in sorted(xs)]
)
powers = st.floats(0.0, 200.0, allow_nan=False, allow_infinity=False)
edges = st.integers(-1_000, 21_000).map(lambda x: x * 1e-3)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-7)


@given(ts=times, p=powers, a=edges, b=edges)
def test_constant_power_gives_p_times_t_for_any_sample_placement(
    ts: list[float], p: float, a: float, b: float
) -> None:
    t0, t1 = min(a, b), max(a, b)
    values = [p] * len(ts)
    assert close(energy_between(ts, values, t0, t1), p * (t1 - t0))


@given(
    ts=times,
    data=st.data(),
    a=edges,
    b=edges,
    frac=st.floats(0.0, 1.0),
)
def test_splitting_a_window_adds_up(
    ts: list[float], data: st.DataObject, a: float, b: float, frac: float
) -> None:
    values = data.draw(st.lists(powers, min_size=len(ts), max_size=len(ts)))
    t0, t1 = min(a, b), max(a, b)
    tm = min(t0 + frac * (t1 - t0), t1)
    whole = energy_between(ts, values, t0, t1)
    parts = energy_between(ts, values, t0, tm) + energy_between(ts, values, tm, t1)
    assert math.isclose(whole, parts, rel_tol=1e-9, abs_tol=1e-6)


@given(
    ts=times.filter(lambda xs: len(xs) >= 2),
    a=st.floats(0.0, 50.0),
    slope=st.floats(-2.0, 2.0),
    f0=st.floats(0.0, 1.0),
    f1=st.floats(0.0, 1.0),
)
def test_linear_ramp_integrates_exactly(
    ts: list[float], a: float, slope: float, f0: float, f1: float
) -> None:
    values = [a + slope * t for t in ts]
    lo, hi = ts[0], ts[-1]
    t0 = lo + min(f0, f1) * (hi - lo)
    t1 = lo + max(f0, f1) * (hi - lo)
    exact = a * (t1 - t0) + slope / 2.0 * (t1 * t1 - t0 * t0)
    assert math.isclose(energy_between(ts, values, t0, t1), exact, rel_tol=1e-9, abs_tol=1e-6)


@given(
    phase=st.floats(0.0, 0.01),
    dt_ms=st.integers(1, 100),
    p=powers,
    n=st.integers(1, 200),
)
def test_sample_phase_does_not_change_constant_power_energy(
    phase: float, dt_ms: int, p: float, n: int
) -> None:
    dt = dt_ms * 1e-3
    ts = [phase + k * dt for k in range(n)]
    t0, t1 = 0.003, 0.003 + 0.5
    assert close(energy_between(ts, [p] * n, t0, t1), p * 0.5)
    ref = [k * dt for k in range(n)]
    assert close(energy_between(ts, [p] * n, t0, t1), energy_between(ref, [p] * n, t0, t1))


@given(ts=times, p=powers, e0=st.floats(0.0, 1e6), a=edges, b=edges)
def test_linear_counter_gives_power_times_duration(
    ts: list[float], p: float, e0: float, a: float, b: float
) -> None:
    counter = [e0 + p * t for t in ts]
    lo, hi = ts[0], ts[-1]
    t0 = min(max(min(a, b), lo), hi)
    t1 = min(max(max(a, b), lo), hi)
    got = counter_energy_between(ts, counter, t0, t1)
    assert math.isclose(got, p * (t1 - t0), rel_tol=1e-9, abs_tol=1e-9 * max(1.0, e0))


@given(ts=times, data=st.data(), a=edges, b=edges, frac=st.floats(0.0, 1.0))
def test_counter_differences_add_up_and_equal_integrated_power(
    ts: list[float], data: st.DataObject, a: float, b: float, frac: float
) -> None:
    steps = data.draw(st.lists(powers, min_size=len(ts), max_size=len(ts)))
    # A counter built as the running integral of a power series gives the same energy as
    # integrating the power series, as long as the window lies within the samples.
    counter = [0.0]
    for k in range(1, len(ts)):
        counter.append(counter[-1] + 0.5 * (steps[k - 1] + steps[k]) * (ts[k] - ts[k - 1]))
    lo, hi = ts[0], ts[-1]
    t0 = min(max(min(a, b), lo), hi)
    t1 = min(max(max(a, b), lo), hi)
    tm = min(t0 + frac * (t1 - t0), t1)
    whole = counter_energy_between(ts, counter, t0, t1)
    parts = counter_energy_between(ts, counter, t0, tm) + counter_energy_between(
        ts, counter, tm, t1
    )
    assert math.isclose(whole, parts, rel_tol=1e-9, abs_tol=1e-6)
    if t0 in ts and t1 in ts:
        assert math.isclose(whole, energy_between(ts, steps, t0, t1), rel_tol=1e-9, abs_tol=1e-6)


def test_window_on_sample_times_is_plain_trapezoid() -> None:
    ts = array("d", [0.0, 1.0, 3.0, 4.0])
    ps = array("d", [2.0, 4.0, 0.0, 10.0])
    # (2+4)/2*1 + (4+0)/2*2 + (0+10)/2*1 = 3 + 4 + 5
    assert energy_between(ts, ps, 0.0, 4.0) == pytest.approx(12.0)
    # Edges interpolated: at 0.5 -> 3 W, at 3.5 -> 5 W.
    expected = (3 + 4) / 2 * 0.5 + (4 + 0) / 2 * 2 + (0 + 5) / 2 * 0.5
    assert energy_between(ts, ps, 0.5, 3.5) == pytest.approx(expected)
    assert mean_power_between(ts, ps, 0.5, 3.5) == pytest.approx(expected / 3.0)


def test_values_are_held_outside_the_samples() -> None:
    ts, ps = [1.0, 2.0], [5.0, 7.0]
    assert interpolate_at(ts, ps, -10.0) == 5.0
    assert interpolate_at(ts, ps, 10.0) == 7.0
    assert energy_between(ts, ps, 3.0, 5.0) == pytest.approx(14.0)


def test_zero_length_window_is_zero_energy_but_mean_is_the_value() -> None:
    ts, ps = [0.0, 1.0], [2.0, 4.0]
    assert energy_between(ts, ps, 0.5, 0.5) == 0.0
    assert mean_power_between(ts, ps, 0.5, 0.5) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("ts", "vs", "t0", "t1", "match"),
    [
        ([], [], 0.0, 1.0, "no samples"),
        ([0.0, 1.0], [1.0], 0.0, 1.0, "differ in length"),
        ([0.0, 1.0], [1.0, 1.0], 1.0, 0.0, "before its start"),
        ([0.0, 1.0], [1.0, 1.0], 0.0, math.inf, "finite"),
    ],
)
def test_bad_input_raises_a_clear_error(
    ts: list[float], vs: list[float], t0: float, t1: float, match: str
) -> None:
    with pytest.raises(IntegrationError, match=match):
        energy_between(ts, vs, t0, t1)
    with pytest.raises(IntegrationError, match=match):
        counter_energy_between(ts, vs, t0, t1)


def test_integration_error_is_a_value_error() -> None:
    assert issubclass(IntegrationError, ValueError)


@given(ts=times, data=st.data(), a=edges, b=edges)
def test_peak_is_at_least_the_mean_and_at_most_the_largest_value(
    ts: list[float], data: st.DataObject, a: float, b: float
) -> None:
    values = data.draw(st.lists(powers, min_size=len(ts), max_size=len(ts)))
    t0, t1 = min(a, b), max(a, b)
    assume(t1 > t0)
    peak = peak_between(ts, values, t0, t1)
    assert peak >= mean_power_between(ts, values, t0, t1) - 1e-9
    assert peak <= max(values) + 1e-9


def test_counter_peak_power_is_the_steepest_segment() -> None:
    ts = [0.0, 1.0, 2.0, 3.0]
    es = [0.0, 1.0, 6.0, 7.0]
    assert counter_peak_power_between(ts, es, 0.0, 3.0) == pytest.approx(5.0)
    assert counter_peak_power_between(ts, es, 2.0, 3.0) == pytest.approx(1.0)


def test_index_range_is_inclusive_on_both_edges() -> None:
    ts = [0.0, 1.0, 2.0, 3.0]
    assert index_range(ts, 1.0, 2.0) == (1, 3)
    assert index_range(ts, 0.5, 2.5) == (1, 3)
    assert index_range(ts, 5.0, 6.0) == (4, 4)


@given(dt_ms=st.integers(1, 1000), n=st.integers(2, 100), start=st.floats(0, 1e4))
def test_even_spacing_has_mean_interval_and_no_jitter(dt_ms: int, n: int, start: float) -> None:
    dt = dt_ms * 1e-3
    mean, jitter = interval_stats([start + k * dt for k in range(n)])
    assert mean is not None and jitter is not None
    assert mean == pytest.approx(dt, rel=1e-6)
    assert jitter == pytest.approx(0.0, abs=1e-6)


def test_interval_stats_jitter_and_short_series() -> None:
    assert interval_stats([]) == (None, None)
    assert interval_stats([1.0]) == (None, None)
    mean, jitter = interval_stats([0.0, 1.0, 3.0])  # intervals 1 and 2
    assert mean == pytest.approx(1.5)
    assert jitter == pytest.approx(0.5)
