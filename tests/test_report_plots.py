"""Figures from the long table: every PNG the data supports, none it does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.report.load import frame_from_rows, long_rows
from pytest_edgeenergy.report.plots import (
    pareto_front,
    plot_cross_device,
    plot_heatmap,
    render_all,
)
from pytest_edgeenergy.report.synthetic import synthetic_report

PNG = b"\x89PNG\r\n\x1a\n"


def _topology_frame() -> Any:
    """A CPU x GPU frequency grid, one DVFS point, two devices, two batch sizes."""
    rows = []
    for sim_model, seed in (("agx-orin", 1), ("nano", 2)):
        report = synthetic_report(
            sim_model=sim_model,
            seed=seed,
            workloads=("resnet18",),
            batch_sizes=(8, 16),
            gpu_freqs_hz=(306e6, 612e6, 918e6),
        )
        grid = []
        for test in report["tests"]:
            for j, cpu_freq_hz in enumerate((729.6e6, 1510.4e6, 1984e6)):
                copy = json.loads(json.dumps(test))
                copy["id"] += f"-cpu{j}"
                for which in ("requested", "read_back"):
                    copy["params"]["operating_point"][which]["cpu_freq_hz"] = int(cpu_freq_hz)
                copy["metrics"]["energy_per_item"]["value"] *= 1 + 0.1 * (j - 1) ** 2
                grid.append(copy)
        dvfs = json.loads(json.dumps(report["tests"][0]))
        dvfs["id"] = "suites/test_infer.py::test_infer[dvfs]"
        dvfs["params"] = {**dvfs["params"], "operating_point": {"requested": {}, "read_back": {}}}
        report["tests"] = [*grid, dvfs]
        rows += long_rows(report, f"{sim_model}.json")
    return frame_from_rows(rows)


def test_render_all_writes_every_figure_as_png(tmp_path: Path) -> None:
    made = render_all(_topology_frame(), tmp_path, prefix="x_")
    names = {p.name for p in made}
    assert names == {
        "x_cross_device.png",
        "x_energy_topology.png",
        "x_energy_vs_gpu_freq.png",
        "x_latency_power_vs_gpu_freq.png",
        "x_energy_vs_batch.png",
        "x_pareto.png",
    }
    for path in made:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000


def test_figures_needing_a_sweep_are_skipped(tmp_path: Path) -> None:
    frame = frame_from_rows(
        long_rows(synthetic_report(batch_sizes=(8,), gpu_freqs_hz=(612e6,)), "one.json")
    )
    made = {p.name for p in render_all(frame, tmp_path)}
    assert made == {"cross_device.png"}  # one point per workload: no Pareto front either
    assert plot_heatmap(frame, tmp_path / "h.png") is None
    assert not (tmp_path / "h.png").exists()


def test_empty_table_makes_nothing(tmp_path: Path) -> None:
    assert render_all(frame_from_rows([]), tmp_path) == []
    assert plot_cross_device(frame_from_rows([]), tmp_path / "c.png") is None


POINT = st.tuples(st.floats(0, 100), st.floats(0, 100))


@given(st.lists(POINT, min_size=1, max_size=30))
def test_pareto_front_is_exactly_the_non_dominated_points(
    points: list[tuple[float, float]],
) -> None:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    front = list(zip(*pareto_front(xs, ys), strict=True))
    assert front == sorted(front)
    for fx, fy in front:  # nothing strictly better in both
        assert not any(x <= fx and y < fy for x, y in points if (x, y) != (fx, fy))
    for x, y in points:  # every point is matched or beaten by the front
        assert any(fx <= x and fy <= y for fx, fy in front)


@pytest.mark.parametrize("axis", ["cpu_freq_hz", "batch_size"])
def test_heatmap_axes(tmp_path: Path, axis: str) -> None:
    path = plot_heatmap(_topology_frame(), tmp_path / f"{axis}.png", y=axis)
    assert path is not None and path.read_bytes().startswith(PNG)
