"""Edge readings: with a reading at each edge, a window's integral does not depend on the
sampling interval there, nor on any sample outside the window (``compute_result`` on
hand-made sample series)."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.meters.compute import WindowContext, WindowRules, compute_result
from pytest_edgeenergy.meters.sampler import Counters, EdgeReading, SampleSlice
from pytest_edgeenergy.meters.window import WindowResult

RULES = WindowRules(
    min_samples=1, min_duration_s=0.0, min_duration_why="none", max_error_fraction=0.2
)
watts = st.floats(0.0, 100.0)


def ctx(interval_s: float) -> WindowContext:
    return WindowContext(
        channels=("A", "B"),
        quantity="power_w",
        total_channel=None,
        total_method="sum",
        source="test",
        simulated=True,
        interval_s=interval_s,
    )


def grid(t_from: float, t_to: float, interval_s: float, phase: float) -> list[float]:
    """Sample times ``t_from + (phase + k) x interval`` up to ``t_to``."""
    n = int((t_to - t_from) / interval_s) + 2
    return [t for k in range(n) if (t := t_from + (phase + k) * interval_s) <= t_to]


def result(
    ts: list[float],
    a: list[float],
    b: list[float],
    t0: float,
    t1: float,
    edges: tuple[EdgeReading | None, EdgeReading | None],
    interval_s: float,
) -> WindowResult:
    data = SampleSlice(0, array("d", ts), (array("d", a), array("d", b)))
    return compute_result(
        label="w",
        t0=t0,
        t1=t1,
        data=data,
        begin=Counters(attempts=0, samples=0),
        end=Counters(attempts=len(ts), samples=len(ts)),
        ctx=ctx(interval_s),
        rules=RULES,
        idle=None,
        edges=edges,
    )


@given(
    t0=st.floats(0.0, 10.0),
    duration_s=st.floats(0.05, 3.0),
    interval_s=st.floats(0.001, 0.5),
    phase=st.floats(0.0, 0.999),
    inside_w=watts,
    outside_w=watts,
    b_w=watts,
)
def test_with_edge_readings_a_step_at_the_edges_is_exact_at_any_interval(
    t0: float,
    duration_s: float,
    interval_s: float,
    phase: float,
    inside_w: float,
    outside_w: float,
    b_w: float,
) -> None:
    """A workload that starts at begin() and stops at end(): power ``inside_w`` within
    the window, ``outside_w`` outside, sampled at any interval and phase."""
    t1 = t0 + duration_s
    ts = grid(t0 - 1.0, t1 + 1.0, interval_s, phase)
    a = [inside_w if t0 < t < t1 else outside_w for t in ts]
    b = [b_w] * len(ts)
    edges = (EdgeReading(t0, (inside_w, b_w)), EdgeReading(t1, (inside_w, b_w)))
    r = result(ts, a, b, t0, t1, edges, interval_s)
    dur = t1 - t0
    assert r.rails["A"].energy_j == pytest.approx(inside_w * dur, rel=1e-9, abs=1e-12)
    assert r.rails["B"].energy_j == pytest.approx(b_w * dur, rel=1e-9, abs=1e-12)
    assert r.total.energy_j == pytest.approx((inside_w + b_w) * dur, rel=1e-9, abs=1e-12)
    assert r.rails["A"].peak_w == pytest.approx(inside_w)


@given(
    t0=st.floats(0.0, 10.0),
    duration_s=st.floats(0.05, 3.0),
    inside=st.lists(st.tuples(st.floats(0.001, 0.999), watts, watts), max_size=30),
    edge_values=st.tuples(watts, watts, watts, watts),
    before=st.lists(st.tuples(st.floats(0.001, 5.0), watts, watts), max_size=5),
    after=st.lists(st.tuples(st.floats(0.001, 5.0), watts, watts), max_size=5),
)
def test_with_edge_readings_samples_outside_the_window_do_not_count(
    t0: float,
    duration_s: float,
    inside: list[tuple[float, float, float]],
    edge_values: tuple[float, float, float, float],
    before: list[tuple[float, float, float]],
    after: list[tuple[float, float, float]],
) -> None:
    t1 = t0 + duration_s
    inner = sorted({(t0 + f * duration_s, a, b) for f, a, b in inside})
    edges = (
        EdgeReading(t0, edge_values[:2]),
        EdgeReading(t1, edge_values[2:]),
    )

    def run(
        pre: list[tuple[float, float, float]], post: list[tuple[float, float, float]]
    ) -> WindowResult | None:
        rows = (
            sorted((t0 - d, a, b) for d, a, b in pre)
            + inner
            + sorted((t1 + d, a, b) for d, a, b in post)
        )
        ts = [row[0] for row in rows]
        if len(set(ts)) != len(ts):
            return None
        return result(ts, [row[1] for row in rows], [row[2] for row in rows], t0, t1, edges, 0.01)

    alone, padded = run([], []), run(before, after)
    if alone is None or padded is None:
        return  # coinciding stamps: not a series a sampler produces
    for name in ("A", "B"):
        assert padded.rails[name].energy_j_estimate == alone.rails[name].energy_j_estimate
        assert padded.rails[name].peak_w == alone.rails[name].peak_w
    assert padded.total.energy_j_estimate == alone.total.energy_j_estimate
    assert padded.samples == alone.samples == len(inner) + 2


def test_without_edge_readings_the_edges_depend_on_the_interval() -> None:
    """The error the edge readings remove: interpolating towards the samples outside the
    window smears a step at each edge over the interval around it (edges midway between
    samples here: step x interval / 8 at each)."""
    t0, t1, inside_w = 1.0, 2.0, 10.0
    for interval_s in (0.01, 0.1, 0.25):
        ts = grid(0.0, 3.0, interval_s, 0.5)
        a = [inside_w if t0 < t < t1 else 0.0 for t in ts]
        without = result(ts, a, [0.0] * len(ts), t0, t1, (None, None), interval_s)
        expected_error = 2 * inside_w * interval_s / 8
        measured = without.rails["A"].energy_j_estimate
        assert measured == pytest.approx(inside_w * (t1 - t0) - expected_error, rel=1e-9)
        edges = (EdgeReading(t0, (inside_w, 0.0)), EdgeReading(t1, (inside_w, 0.0)))
        with_edges = result(ts, a, [0.0] * len(ts), t0, t1, edges, interval_s)
        assert with_edges.rails["A"].energy_j_estimate == pytest.approx(10.0, rel=1e-12)


@given(
    fail_at=st.sets(st.integers(0, 19), max_size=8),
    edge_a=st.sampled_from([5.0, math.nan]),
)
def test_failed_reads_are_bridged_by_the_line(fail_at: set[int], edge_a: float) -> None:
    """Constant power with failed reads (NaN) anywhere, an edge included: the rail's energy
    stays exact; a failed edge read counts for its rail; the other rail is untouched."""
    ts = [0.1 * k for k in range(20)]
    a = [math.nan if k in fail_at else 5.0 for k in range(20)]
    t0, t1 = 0.05, 1.85
    failed = (("A", "EIO"),) if math.isnan(edge_a) else ()
    edges = (EdgeReading(t0, (edge_a, 1.0), failed), EdgeReading(t1, (5.0, 1.0)))
    r = result(ts, a, [1.0] * 20, t0, t1, edges, 0.1)
    assert r.rails["A"].read_errors == ({"EIO": 1} if failed else {})
    assert r.read_errors == r.rails["A"].read_errors
    inside = [k for k in range(20) if t0 <= ts[k] <= t1]
    assert r.rails["A"].samples == sum(k not in fail_at for k in inside) + 1 + (
        not math.isnan(edge_a)
    )
    assert r.rails["A"].energy_j_estimate == pytest.approx(5.0 * (t1 - t0), rel=1e-9)
    assert r.rails["B"].energy_j == pytest.approx(1.0 * (t1 - t0), rel=1e-9)
    assert r.rails["B"].samples == len(inside) + 2
