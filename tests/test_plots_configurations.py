"""Figures that say what they mean (issue 28, section 2): a GPU-frequency line is one set
of the other knobs (never a mean over CPU clocks), the energy topology hatches and names the
cells not measured, and the Pareto figure draws its front. The checks read the data behind
each figure (its matplotlib objects), not pixels."""

from __future__ import annotations

from typing import Any

import pytest
from report_helpers import virtual_report

from pytest_edgeenergy.present.plots import (
    energy_vs_gpu_freq_figure,
    heatmap_figure,
    latency_power_vs_gpu_freq_figure,
    pareto_figure,
    pareto_front,
)
from pytest_edgeenergy.report.load import frame_from_rows, long_rows
from pytest_edgeenergy.report.model import (
    build_operating_point,
    build_params,
    build_result,
    build_validity,
    make_metric,
)

CPU_LOW, CPU_HIGH = 729_600_000, 1_510_400_000
# (GPU Hz, CPU Hz, energy per item J, latency p90 s): 306 MHz ran at two CPU clocks, 612 and
# 918 MHz at one, as a search or two partial sweeps leave a grid.
POINTS = (
    (306_000_000, CPU_LOW, 0.0483, 0.030),
    (306_000_000, CPU_HIGH, 0.0403, 0.024),
    (612_000_000, CPU_LOW, 0.0500, 0.016),
    (918_000_000, CPU_LOW, 0.0560, 0.012),
)


def _frame(points: tuple[tuple[int, int, float, float], ...] = POINTS) -> Any:
    tests = []
    for gpu_hz, cpu_hz, per_item_j, p90_s in points:
        pinned = {"power_mode": "15W", "gpu_freq_hz": gpu_hz, "cpu_freq_hz": cpu_hz}
        label = f"15W-gpu{gpu_hz // 1_000_000}MHz-cpu{cpu_hz // 100_000}"
        tests.append(
            build_result(
                f"suites/test_x.py::test_x[bs8-{label}]",
                status="passed",
                params=build_params(
                    workload="mobilenet_v2",
                    batch_size=8,
                    graph_mode="eager",
                    precision="fp32",
                    operating_point=build_operating_point({**pinned, "id": label}, pinned),
                ),
                metrics={
                    "energy_per_item": make_metric("energy_per_item", [per_item_j] * 3),
                    "latency_p90": make_metric("latency_p90", [p90_s] * 3),
                    "power_mean": make_metric("power_mean", [per_item_j * 8 / p90_s] * 3),
                },
                validity=build_validity(samples=150, valid=True),
                duration_s=1.0,
            )
        )
    return frame_from_rows(long_rows(virtual_report(tests), "r.json"))


def _drawn(ax: Any) -> dict[str, tuple[list[float], list[float]]]:
    """The labelled lines of ``ax``: label -> (x, y), y rounded (a metric is the mean of its
    three equal samples)."""
    return {
        line.get_label(): (
            [round(x, 6) for x in line.get_xdata()],
            [round(y, 9) for y in line.get_ydata()],
        )
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def test_energy_vs_gpu_freq_draws_a_line_per_cpu_clock_never_their_mean() -> None:
    (ax,) = energy_vs_gpu_freq_figure(_frame()).axes
    assert _drawn(ax) == {
        "cpu729.6MHz: min 0.0483 at 306 MHz": ([306, 612, 918], [0.0483, 0.05, 0.056]),
        "cpu1.5104GHz: min 0.0403 at 306 MHz": ([306], [0.0403]),
    }
    assert ax.get_legend().get_title().get_text() == "other knobs (star: minimum)"
    title = " ".join(ax.get_title().split())
    assert title.endswith("mobilenet_v2, batch 8, at 15W (simulated)")


def test_the_lowest_line_minimum_is_the_energy_topologys_minimum() -> None:
    frame = _frame()
    (line_ax,) = energy_vs_gpu_freq_figure(frame).axes
    lowest = min(min(ys) for _, ys in _drawn(line_ax).values())
    heat = heatmap_figure(frame).axes[0]
    (note,) = [t.get_text() for t in heat.texts if t.get_text().startswith("min ")]
    assert note == "min 0.0403: GPU 306 MHz, CPU 1510.4 MHz"
    assert lowest == pytest.approx(0.0403)


def test_latency_and_power_lines_are_per_cpu_clock_too() -> None:
    top, bottom = latency_power_vs_gpu_freq_figure(_frame()).axes
    assert _drawn(top) == {
        "cpu729.6MHz": ([306, 612, 918], [30.0, 16.0, 12.0]),  # ms
        "cpu1.5104GHz": ([306], [24.0]),
    }
    assert sorted(len(xs) for xs, _ in _drawn(bottom).values()) == [1, 3]


def test_one_cpu_clock_draws_one_line_and_the_title_names_the_other_knobs() -> None:
    (ax,) = energy_vs_gpu_freq_figure(_frame(POINTS[:1] + POINTS[2:])).axes
    assert list(_drawn(ax).values()) == [([306, 612, 918], [0.0483, 0.05, 0.056])]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "sim:orin-nano (simulated): min 0.0483 at 306 MHz"
    ]
    assert " ".join(ax.get_title().split()).endswith("batch 8, at 15W cpu729.6MHz (simulated)")


def test_energy_topology_hatches_and_names_the_cells_not_measured() -> None:
    ax = heatmap_figure(_frame()).axes[0]
    image = ax.get_images()[0].get_array()
    assert image.shape == (2, 3)  # CPU (rows) x GPU (columns)
    hatched = [p for p in ax.patches if p.get_hatch()]
    cells = sorted((round(p.get_x() + 0.5), round(p.get_y() + 0.5)) for p in hatched)
    assert cells == [(1, 1), (2, 1)]  # 612 and 918 MHz were not run at the high CPU clock
    assert all(bool(image.mask[iy, ix]) for ix, iy in cells)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["not measured"]


def test_a_full_grid_has_no_not_measured_note() -> None:
    full = (*POINTS, (612_000_000, CPU_HIGH, 0.045, 0.014), (918_000_000, CPU_HIGH, 0.05, 0.01))
    ax = heatmap_figure(_frame(full)).axes[0]
    assert not [p for p in ax.patches if p.get_hatch()]
    assert ax.get_legend() is None


def test_pareto_figure_draws_each_devices_front_through_its_non_dominated_points() -> None:
    (ax,) = pareto_figure(_frame()).axes
    fronts = {k: v for k, v in _drawn(ax).items() if k.endswith("Pareto front")}
    latency_ms = [p[3] * 1e3 for p in POINTS]
    energy = [p[2] for p in POINTS]
    xs, ys = pareto_front(latency_ms, energy)
    assert fronts == {
        "sim:orin-nano (simulated): Pareto front": (
            [round(x, 6) for x in xs],
            [round(y, 9) for y in ys],
        )
    }
    assert len(xs) == 3  # 12 ms at 0.056 J, 16 ms at 0.05 J, 24 ms at 0.0403 J
    assert "sim:orin-nano (simulated): Pareto front" in [
        t.get_text() for t in ax.get_legend().get_texts()
    ]


@pytest.mark.parametrize(
    ("op", "axes", "others"),
    [
        ("15W gpu612MHz cpu1.5104GHz", ("gpu_freq_hz",), "15W cpu1.5104GHz"),
        ("mode max gpu min cpu max 4cores", ("gpu_freq_hz",), "mode max cpu max 4cores"),
        ("gpu1.3GHz cpu max emc3.2GHz", ("gpu_freq_hz", "cpu_freq_hz"), "emc3.2GHz"),
        ("gpu612MHz", ("gpu_freq_hz",), ""),
    ],
)
def test_the_other_knobs_of_a_point_leave_out_the_axes_only(
    op: str, axes: tuple[str, ...], others: str
) -> None:
    from pytest_edgeenergy.present.plots import _other_knobs

    assert _other_knobs(op, *axes) == others
