"""Figures and search output that do not mislead (issue 20, section 2, "Plots that do not
mislead"): energy vs batch size draws one line per configuration (never an average over
graph modes, runtimes or precisions) and leaves load-scenario streams out, saying so; no
title is clipped by the figure's edge; the offline search prints frequencies in MHz/GHz."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.commands import main
from pytest_edgeenergy.present.plots import (
    FIGURES,
    NotDrawn,
    energy_vs_batch_figure,
    energy_vs_gpu_freq_figure,
    heatmap_figure,
    latency_power_vs_gpu_freq_figure,
    render_all,
)
from pytest_edgeenergy.report.load import check_report, frame_from_rows, long_rows
from pytest_edgeenergy.report.model import (
    build_device,
    build_header,
    build_operating_point,
    build_params,
    build_result,
    build_validity,
    make_metric,
)

Run = tuple[dict[str, Any], int, float]
"""(params besides workload/batch/operating point, batch size, energy per item J)."""

EAGER = {"graph_mode": "eager", "precision": "fp32", "device": "cpu"}
SCRIPT_INT8 = {"graph_mode": "torchscript", "precision": "int8", "device": "cpu"}
ONNX = {
    "graph_mode": "onnx",
    "precision": "fp32",
    "device": "cpu",
    "runtime": "onnxruntime",
    "provider": "CPUExecutionProvider",
}
STREAM = {**EAGER, "scenario": "fixed-rate", "rate_hz": 30}


def _report(runs: Iterable[Run], *, sim_model: str = "orin-nano") -> dict[str, Any]:
    """A report of ``mobilenet_v2`` results at power mode 15W, one test per run."""
    identity = Identity(
        model="NVIDIA Jetson Orin Nano", soc="tegra234", l4t="36.4.3", simulated=True,
        sim_model=sim_model,
    )  # fmt: skip
    header = build_header(
        build_device(identity, RailMap(rails=(), total_rail=None)),
        software={"python": "3.11.0", "torch": None, "torchvision": None, "platform": None},
    )
    tests = []
    for i, (params, batch, per_item_j) in enumerate(runs):
        point = build_operating_point({"power_mode": "15W", "id": "15W"}, {"power_mode": "15W"})
        config = "-".join(str(v) for v in params.values())
        tests.append(
            build_result(
                f"suites/test_x.py::test_x[bs{batch}-15W-{config}-{i}]",
                status="passed",
                params=build_params(
                    workload="mobilenet_v2", batch_size=batch, operating_point=point, **params
                ),
                metrics={
                    "energy_per_item": make_metric("energy_per_item", [per_item_j] * 3),
                    "latency_p50": make_metric("latency_p50", [per_item_j / 5] * 3),
                    "power_mean": make_metric("power_mean", [5.0] * 3),
                },
                validity=build_validity(samples=150, valid=True),
                duration_s=1.0,
            )
        )
    header["finished_at"] = header["started_at"]
    return check_report({**header, "tests": tests}, f"{sim_model}.json")


def _frame(report: dict[str, Any]) -> Any:
    return frame_from_rows(long_rows(report, "r.json"))


def _lines(ax: Any) -> dict[str, tuple[list[float], list[float]]]:
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    drawn = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in drawn] == legend
    return {  # rounded: a metric's value is the mean of its three equal samples
        line.get_label(): (line.get_xdata().tolist(), [round(y, 9) for y in line.get_ydata()])
        for line in drawn
    }


# -- energy vs batch size: a line per configuration, streams apart --------------------------


def test_the_main_jobs_batch_8_configurations_and_stream_make_no_batch_line(
    tmp_path: Path,
) -> None:
    # `make run`: every configuration at batch 8, the 30 frames/s stream at batch 1.
    frame = _frame(
        _report(
            [
                (EAGER, 8, 0.125),
                (SCRIPT_INT8, 8, 0.090),
                (ONNX, 8, 0.031),
                ({**EAGER, "precision": "int8"}, 8, 0.110),
                ({**SCRIPT_INT8, "precision": "fp32"}, 8, 0.120),
                (STREAM, 1, 0.443),
            ]
        )
    )
    with pytest.raises(NotDrawn) as info:
        energy_vs_batch_figure(frame)
    assert str(info.value) == (
        "one batch size per workload only (batch 8); the plot needs two or more; "
        "left out: mobilenet_v2 fixed-rate@30/s at batch 1 (a load scenario: its energy per "
        "item includes the idle time between queries)"
    )
    notes = {n.plot: n.reason for n in render_all(frame, tmp_path).notes}
    assert notes["energy_vs_batch"] == str(info.value)


def test_each_configuration_is_its_own_line_and_the_stream_is_named_apart() -> None:
    timing = [{"training_timing": {"e2e_s_mean": 0.1 * b}} for b in (1, 2)]
    frame = _frame(
        _report(
            [
                (EAGER, 8, 0.125),
                (EAGER, 16, 0.100),
                (SCRIPT_INT8, 8, 0.090),
                (SCRIPT_INT8, 16, 0.070),
                (ONNX, 8, 0.031),
                (ONNX, 16, 0.025),
                # a record of how the run went differs per run: still one configuration
                ({**EAGER, "device": "cuda", **timing[0]}, 8, 0.010),
                ({**EAGER, "device": "cuda", **timing[1]}, 16, 0.008),
                (STREAM, 1, 0.443),
            ]
        )
    )
    fig = energy_vs_batch_figure(frame)
    (ax,) = [a for a in fig.axes if a.get_legend() is not None]
    assert _lines(ax) == {
        # every line its configuration's own values, never a mean over several
        "eager/fp32/cpu": ([8, 16], [0.125, 0.100]),
        "onnxruntime/fp32/cpu": ([8, 16], [0.031, 0.025]),
        "torchscript/int8/cpu": ([8, 16], [0.090, 0.070]),
        "eager/fp32/cuda": ([8, 16], [0.010, 0.008]),
    }
    assert ax.get_legend().get_title().get_text() == "configuration (all 15W)"
    title = " ".join(ax.get_title().split())  # as wrapped to the figure
    assert "mobilenet_v2" in title and "left out: mobilenet_v2 fixed-rate@30/s at batch 1" in title
    assert not any(1.0 in xs for xs, _ in _lines(ax).values())


def test_only_the_operating_point_varies_the_legend_names_only_it() -> None:
    report = synthetic_report(workloads=("resnet18",), batch_sizes=(8, 16), gpu_freqs_hz=(612e6,))
    second = synthetic_report(workloads=("resnet18",), batch_sizes=(8, 16), gpu_freqs_hz=(918e6,))
    report["tests"] += second["tests"]
    (ax,) = [a for a in energy_vs_batch_figure(_frame(report)).axes if a.get_legend()]
    assert list(_lines(ax)) == ["gpu612MHz", "gpu918MHz"]
    assert ax.get_legend().get_title().get_text() == "operating point (all eager/fp16)"


def test_gpu_frequency_lines_are_of_one_configuration_and_say_which() -> None:
    runs = [(EAGER, 8, 0.125), (EAGER, 8, 0.100), (ONNX, 8, 0.031), (ONNX, 8, 0.025)]
    report = _report(runs)
    for test, gpu_hz in zip(report["tests"], [306_000_000, 612_000_000] * 2, strict=True):
        point = test["params"]["operating_point"]
        point["requested"]["gpu_freq_hz"] = point["read_back"]["gpu_freq_hz"] = gpu_hz
    frame = _frame(report)
    (ax,) = energy_vs_gpu_freq_figure(frame).axes
    (line,) = [x for x in ax.get_lines() if not x.get_label().startswith("_")]
    assert line.get_xdata().tolist() == [306, 612]
    assert [round(y, 9) for y in line.get_ydata()] == [0.125, 0.100]  # eager's, not a mean
    title = " ".join(ax.get_title().split())  # as wrapped to the figure
    assert "mobilenet_v2, batch 8, eager/fp32/cpu (1 of 2 configurations)" in title
    top, bottom = latency_power_vs_gpu_freq_figure(frame).axes
    assert "eager/fp32/cpu (1 of 2 configurations)" in " ".join(top.get_title().split())
    (power,) = [x for x in bottom.get_lines() if not x.get_label().startswith("_")]
    assert power.get_xdata().tolist() == [306, 612]


# -- titles inside the figure -----------------------------------------------------------------


def _inside(fig: Any) -> list[str]:
    """Titles (figure and axes) whose drawn box leaves the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    out = []
    for text in [*fig.texts, *(ax.title for ax in fig.axes)]:
        if not text.get_text():
            continue
        b = text.get_window_extent(renderer)
        if b.x0 < box.x0 - 0.5 or b.x1 > box.x1 + 0.5 or b.y0 < box.y0 - 0.5 or b.y1 > box.y1 + 0.5:
            out.append(f"{text.get_text()!r}: {b} outside {box.bounds}")
    return out


def _topology(sim_model: str, workload: str) -> Any:
    """A CPU x GPU frequency grid of one workload and batch size."""
    report = synthetic_report(
        sim_model=sim_model, workloads=(workload,), batch_sizes=(8,),
        gpu_freqs_hz=(306e6, 612e6, 918e6),
    )  # fmt: skip
    grid = []
    for test in report["tests"]:
        for j, cpu_hz in enumerate((729_600_000, 1_510_400_000, 1_984_000_000)):
            copy = json.loads(json.dumps(test))
            copy["id"] += f"-cpu{j}"
            for which in ("requested", "read_back"):
                copy["params"]["operating_point"][which]["cpu_freq_hz"] = cpu_hz
            grid.append(copy)
    report["tests"] = grid
    return _frame(report)


LONG_MODEL = "orin-nano-super-engineering-reference"
LONG_WORKLOAD = "mobilenet_v3_small_train"


def test_the_energy_topology_title_lies_inside_the_figure() -> None:
    fig = heatmap_figure(_topology(LONG_MODEL, LONG_WORKLOAD))
    assert _inside(fig) == []
    # Wrapped, not cut: every word is still there.
    (ax,) = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    words = ax.get_title().split()
    assert f"sim:{LONG_MODEL}" in words and f"{LONG_WORKLOAD}," in words
    assert ax.get_title().count("\n") >= 1


def test_a_short_title_is_left_as_it_is() -> None:
    fig = heatmap_figure(_topology("nano", "resnet18"))
    (ax,) = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert ax.get_title() == "energy per item [J]: sim:nano (simulated), resnet18, batch 8"
    assert _inside(fig) == []


def test_every_figure_keeps_its_titles_inside() -> None:
    frame = _topology(LONG_MODEL, LONG_WORKLOAD)
    drawn = 0
    for name, build in FIGURES:
        try:
            fig = build(frame)
        except NotDrawn:
            continue
        drawn += 1
        assert _inside(fig) == [], name
    assert drawn >= 4


# -- offline search: frequencies as the rest of the project writes them ------------------------


def test_offline_search_prints_frequencies_in_mhz_and_ghz(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["gpu_freq_hz", "cpu_freq_hz", "batch_size", "time_s", "power_w"])
        writer.writerow([921_600_000, 1_510_400_000, 4, 0.1, 6.0])
        writer.writerow([306_000_000, 729_600_000, 4, 0.3, 3.0])
    code = main(["search", "--replay", str(path), "--objective", "min-energy", "--trials", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "cpu_freq=1.5104GHz gpu_freq=921.6MHz batch_size=4" in out
    assert "cpu_freq=729.6MHz gpu_freq=306MHz batch_size=4" in out
    assert "best: cpu_freq=1.5104GHz gpu_freq=921.6MHz batch_size=4: " in out
    assert "_hz=" not in out and "921600000" not in out
    # The machine-readable form keeps Hz.
    main(["search", "--replay", str(path), "--objective", "min-energy", "--trials", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["best"]["knobs"]["gpu_freq_hz"] == 921_600_000
