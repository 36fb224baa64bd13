"""End to end on a virtual board: measured window energy against the simulator's ground truth."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

sim_tree = pytest.importorskip("pytest_edgeenergy.sim.tree", reason="sim.tree not available")
sim_runner = pytest.importorskip("pytest_edgeenergy.sim.runner", reason="sim.runner missing")
sim_truth = pytest.importorskip("pytest_edgeenergy.sim.truth", reason="sim.truth missing")

from pytest_edgeenergy.board.detect import detect  # noqa: E402
from pytest_edgeenergy.meters.factory import open_source  # noqa: E402
from pytest_edgeenergy.meters.meter import Meter  # noqa: E402


@pytest.mark.parametrize(
    ("model", "load"),
    [("orin-nano", "0.7"), ("agx-orin", "0.3"), ("nano", "0.5")],
)
def test_window_energy_matches_ground_truth(tmp_path: Path, model: str, load: str) -> None:
    root = sim_tree.create(model, tmp_path / model)
    (root / sim_runner.LOAD_OVERRIDE).write_text(load + "\n")
    with (
        sim_runner.SimProcess(root),
        Meter(open_source("auto", detect(root), interval_s=0.01), interval_s=0.01) as meter,
    ):
        assert meter.source.name == "ina" and meter.source.simulated
        before = sim_truth.read_truth(root)
        w = meter.begin(f"{model}-{load}")
        after_begin = sim_truth.read_truth(root)
        time.sleep(1.0)
        end_truth = sim_truth.read_truth(root)
        r = w.end()
        later = sim_truth.read_truth(root)

    # Ground truth at the window edges: the last record written at or before each edge.
    start_rec = before if after_begin.t_s > r.start_s else after_begin
    end_rec = end_truth if later.t_s > r.end_s else later
    assert start_rec.t_s <= r.start_s and end_rec.t_s <= r.end_s
    true_j = end_rec.total_energy_j_at(r.end_s) - start_rec.total_energy_j_at(r.start_s)

    assert r.valid, r.invalid_reason
    assert r.simulated is True
    assert r.total.method == start_rec.total_method
    assert r.total.energy_j is not None
    assert r.total.energy_j == pytest.approx(true_j, rel=0.05)
    for name, rail in r.rails.items():
        rail_true = end_rec.energy_j_at(r.end_s)[name] - start_rec.energy_j_at(r.start_s)[name]
        assert rail.energy_j == pytest.approx(rail_true, rel=0.05, abs=0.01), name
