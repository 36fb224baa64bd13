"""Latency percentiles, summaries and the memory extrapolation/estimate arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.bench.memory import (
    CUDA_CONTEXT_BYTES,
    GIB,
    MIB,
    default_margin_bytes,
    estimate_peak_bytes,
    extrapolate_linear,
    format_gib,
)
from pytest_edgeenergy.bench.stats import percentile, summarize_latencies

floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def test_percentile_known_values() -> None:
    xs = [float(i) for i in range(1, 101)]  # 1..100
    assert percentile(xs, 0) == 1.0
    assert percentile(xs, 100) == 100.0
    assert percentile(xs, 50) == pytest.approx(50.5)
    assert percentile(xs, 90) == pytest.approx(90.1)
    assert percentile(xs, 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 3.0], 25) == pytest.approx(1.5)


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


@given(st.lists(floats, min_size=1, max_size=60), st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy_linear(xs: list[float], q: float) -> None:
    xs.sort()
    expected = float(np.percentile(xs, q))
    assert percentile(xs, q) == pytest.approx(expected, rel=1e-9, abs=1e-6)
    assert xs[0] <= percentile(xs, q) <= xs[-1]


def test_summarize_latencies_known() -> None:
    s = summarize_latencies([0.004, 0.001, 0.003, 0.002, 0.005])
    assert s is not None
    assert s.n == 5
    assert s.mean_s == pytest.approx(0.003)
    assert s.p50_s == pytest.approx(0.003)
    assert s.p90_s == pytest.approx(0.0046)
    assert s.p99_s == pytest.approx(0.00496)
    assert (s.min_s, s.max_s) == (0.001, 0.005)
    assert summarize_latencies([]) is None


@given(st.lists(st.floats(min_value=0, max_value=10), min_size=1, max_size=50))
def test_summary_percentiles_are_ordered(xs: list[float]) -> None:
    s = summarize_latencies(xs)
    assert s is not None
    assert s.min_s <= s.p50_s <= s.p90_s <= s.p99_s <= s.max_s
    assert s.min_s - 1e-12 <= s.mean_s <= s.max_s + 1e-12


# ---- memory arithmetic ---------------------------------------------------------------


@given(
    st.integers(min_value=0, max_value=2**33),
    st.integers(min_value=0, max_value=2**28),
    st.integers(min_value=1, max_value=512),
)
def test_extrapolation_is_exact_on_a_line(fixed: int, per_item: int, batch: int) -> None:
    points = {1: fixed + per_item, 2: fixed + 2 * per_item, 4: fixed + 4 * per_item}
    assert extrapolate_linear(points, batch) == fixed + per_item * batch


@given(
    st.dictionaries(
        st.integers(min_value=1, max_value=16),
        st.integers(min_value=0, max_value=2**32),
        min_size=2,
        max_size=5,
    ),
    st.integers(min_value=1, max_value=256),
    st.integers(min_value=0, max_value=256),
)
def test_extrapolation_never_shrinks(points: dict[int, int], b: int, more: int) -> None:
    lo = extrapolate_linear(points, b)
    hi = extrapolate_linear(points, b + more)
    assert hi >= lo >= 0
    below = [v for k, v in points.items() if k <= b]
    if below:
        assert lo >= max(below)


def test_extrapolation_needs_two_batches() -> None:
    with pytest.raises(ValueError, match="two batch sizes"):
        extrapolate_linear({1: 100}, 8)


def test_estimate_peak_bytes_arithmetic() -> None:
    # ResNet-18: 11.7 M parameters
    fp32 = estimate_peak_bytes(params=11_700_000)
    assert fp32 == 46_800_000
    assert estimate_peak_bytes(params=11_700_000, precision="fp16") == fp32 // 2
    assert estimate_peak_bytes(params=11_700_000, precision="int4") == fp32 // 8
    assert estimate_peak_bytes(params=1000, training=True) == 16_000
    assert estimate_peak_bytes(params=1000, host_copy=True) == 8_000
    assert (
        estimate_peak_bytes(params=1000, batch_size=64, activation_bytes_per_item=10, cuda=True)
        == 4000 + 640 + CUDA_CONTEXT_BYTES
    )
    with pytest.raises(ValueError, match="precision 'fp13'"):
        estimate_peak_bytes(params=1, precision="fp13")
    with pytest.raises(ValueError, match="batch_size"):
        estimate_peak_bytes(params=1, batch_size=0)


def test_default_margin_bounds() -> None:
    assert default_margin_bytes(None) == 512 * MIB
    assert default_margin_bytes(4 * GIB) == 512 * MIB  # Nano: 10 % is below the floor
    assert default_margin_bytes(8 * GIB) == pytest.approx(0.8 * GIB, abs=1)
    assert default_margin_bytes(64 * GIB) == 2 * GIB


def test_format_gib() -> None:
    assert format_gib(1.5 * GIB) == "1.50 GiB"
    assert format_gib(300 * MIB) == "0.29 GiB"
    assert format_gib(20 * MIB) == "20 MiB"
    assert not math.isnan(float(format_gib(0).split()[0]))
