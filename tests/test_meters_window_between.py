"""Windows made after the fact from stamps taken elsewhere (``Meter.window_between``): against
the virtual board's ground truth, additive, and refused for edges that cannot be a window."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_edgeenergy.board.detect import detect
from pytest_edgeenergy.meters.factory import open_source
from pytest_edgeenergy.meters.meter import Meter
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.sim.truth import Truth, read_truth


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = create("orin-nano", tmp_path_factory.mktemp("between") / "board")
    (root / LOAD_OVERRIDE).write_text("0.5\n")
    with SimProcess(root):
        yield root


@pytest.fixture
def meter(board: Path) -> Iterator[Meter]:
    with Meter(open_source("auto", detect(board), interval_s=0.01), interval_s=0.01) as m:
        yield m


def truth_at(root: Path) -> tuple[float, Truth, Truth]:
    """A stamp taken now, with the ground-truth records read just before and after it."""
    before = read_truth(root)
    t = time.monotonic()
    after = read_truth(root)
    return t, before, after


def true_energy_j(t: float, before: Truth, after: Truth) -> float:
    """Board energy at ``t`` from the last record written at or before it."""
    rec = before if after.t_s > t else after
    assert rec.t_s <= t
    return rec.total_energy_j_at(t)


def test_a_window_between_two_past_stamps_matches_the_ground_truth(
    board: Path, meter: Meter
) -> None:
    # The power steps from load 0.9 to 0.1 between the stamps: a window integrated anywhere
    # but between them would miss the step's share.
    (board / LOAD_OVERRIDE).write_text("0.9\n")
    try:
        time.sleep(0.3)
        t0, b0, a0 = truth_at(board)
        time.sleep(0.4)
        (board / LOAD_OVERRIDE).write_text("0.1\n")
        time.sleep(0.4)
        t1, b1, a1 = truth_at(board)
        time.sleep(0.3)  # the window is made later, after more samples came
    finally:
        (board / LOAD_OVERRIDE).write_text("0.5\n")
    r = meter.window_between("stamped", t0, t1)
    assert (r.start_s, r.end_s, r.duration_s) == (t0, t1, t1 - t0)
    assert r.valid, r.invalid_reason
    assert r.edge_readings == 0 and r.samples > 50
    true_j = true_energy_j(t1, b1, a1) - true_energy_j(t0, b0, a0)
    # Steady power at both edges (0.3 s settled before t0, 0.4 s after the step before
    # t1): the interpolated edges are exact up to the ±1 % noise; the step inside the window
    # is sampled every 10 ms, one interval of 0.8 s at most off by the step's height.
    assert r.total.energy_j == pytest.approx(true_j, rel=0.05)


def test_windows_after_the_fact_add_up(board: Path, meter: Meter) -> None:
    t0 = time.monotonic()
    time.sleep(0.2)
    t1 = time.monotonic()
    time.sleep(0.2)
    t2 = time.monotonic()
    first, second = meter.window_between("a", t0, t1), meter.window_between("b", t1, t2)
    whole = meter.window_between("ab", t0, t2)
    assert first.total.energy_j is not None and second.total.energy_j is not None
    assert first.total.energy_j + second.total.energy_j == pytest.approx(
        whole.total.energy_j, rel=1e-9
    )


def test_counters_bracket_the_reads_of_a_window(board: Path, meter: Meter) -> None:
    begin = meter.sampler.counters()
    t0 = time.monotonic()
    time.sleep(0.2)
    t1 = time.monotonic()
    end = meter.sampler.counters()
    r = meter.window_between("counted", t0, t1, begin=begin, end=end)
    assert r.reads == end.attempts - begin.attempts > 0
    assert meter.window_between("uncounted", t0, t1).reads == 0


@pytest.mark.parametrize(
    ("edges", "says"),
    [
        ((2.0, 1.0), "is before its start"),
        ((1.0, math.inf), "must be finite"),
        ((1.0, 1e12), "is in the future"),
        ((0.0, 0.0), "before the sampler's first sample"),
    ],
)
def test_edges_that_cannot_be_a_window_are_refused(
    meter: Meter, edges: tuple[float, float], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        meter.window_between("bad", *edges)
