"""Figures from the long table: every PNG the data supports, and why not the others."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.present.plots import (
    FIGURES,
    PlotNote,
    cross_device_figure,
    energy_vs_batch_figure,
    energy_vs_gpu_freq_figure,
    latency_power_vs_gpu_freq_figure,
    pareto_figure,
    pareto_front,
    plot_cross_device,
    plot_heatmap,
    render_all,
)
from pytest_edgeenergy.report.external import load_loudva_csv
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

PNG = b"\x89PNG\r\n\x1a\n"
LOUDVA = Path(__file__).resolve().parent / "shared" / "data"
LOUDVA_CSV = LOUDVA / "jetson_gpufreq_batch_profiling_loudva.csv"
ALL = {name for name, _ in FIGURES}


def _frame(*reports: dict[str, Any]) -> Any:
    rows = []
    for i, report in enumerate(reports):
        rows += long_rows(report, f"r{i}.json")
    return frame_from_rows(rows)


def _requested(**pinned: Any) -> dict[str, Any]:
    """A requested point as the plugin writes it: every field, null where not pinned."""
    fields = ("power_mode", "cpu_freq_hz", "gpu_freq_hz", "emc_freq_hz", "cpu_cores", "governor")
    point: dict[str, Any] = dict.fromkeys(fields)
    point.update(pinned)
    point["id"] = "-".join(f"{k}{v}" for k, v in pinned.items()) or "dvfs"
    return point


def _topology_frame() -> Any:
    """A CPU x GPU frequency grid, one DVFS point, two devices, two batch sizes."""
    reports = []
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
        reports.append(report)
    return _frame(*reports)


def _window_report(sim_model: str, gpu_freqs_hz: Sequence[float | None], seed: int = 0) -> Any:
    """A report of ``energy`` fixture results (windows: no items, no batch size), one test
    per GPU frequency (None: nothing pinned)."""
    rng = random.Random(seed)
    identity = Identity(
        model=f"NVIDIA Jetson {sim_model}", soc="tegra234", l4t="36.4.3", simulated=True,
        sim_model=sim_model,
    )  # fmt: skip
    header = build_header(
        build_device(identity, RailMap(rails=(), total_rail=None)),
        software={"python": "3.11.0", "torch": None, "torchvision": None, "platform": None},
        run_id=f"{rng.getrandbits(128):032x}",
    )
    tests = []
    for freq in gpu_freqs_hz:
        pinned = {"gpu_freq_hz": int(freq)} if freq is not None else {}
        duration = [0.5 / (freq or 6e8) * 1e9 * rng.uniform(0.98, 1.02) for _ in range(3)]
        power = [3.0 + 9.0 * (freq or 6e8) / 1e9 for _ in duration]
        energy = [p * d for p, d in zip(power, duration, strict=True)]
        metrics = {
            "energy_j": make_metric("energy_j", energy),
            "energy_net_j": make_metric("energy_net_j", [e - 2.0 * d for e, d in
                                                         zip(energy, duration, strict=True)]),
            "power_mean": make_metric("power_mean", power),
            "power_peak": make_metric("power_peak", [p * 1.3 for p in power]),
            "duration_s": make_metric("duration_s", duration),
            "energy_j.VDD_IN": make_metric("energy_j.VDD_IN", energy, unit="J"),
            "load.energy_j": make_metric("energy_j", [0.1, 0.1, 0.1]),
        }  # fmt: skip
        point = build_operating_point(_requested(**pinned), pinned)
        tests.append(
            build_result(
                f"tests/test_decode.py::test_decode[{_requested(**pinned)['id']}]",
                status="passed",
                params=build_params(operating_point=point),
                metrics=metrics,
                validity=build_validity(samples=150, valid=True),
                duration_s=2.0,
            )
        )
    header["finished_at"] = header["started_at"]
    return check_report({**header, "tests": tests}, f"{sim_model}.json")


def _labelled_lines(ax: Any) -> list[Any]:
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def _legend(ax: Any) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend is not None else []


def _data_axes(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def test_render_all_writes_every_figure_as_png(tmp_path: Path) -> None:
    done = render_all(_topology_frame(), tmp_path, prefix="x_")
    assert {p.name for p in done.written} == {f"x_{name}.png" for name in ALL}
    assert done.notes == ()
    assert list(done) == list(done.written)
    for path in done.written:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000


def test_figures_needing_a_sweep_say_why_they_are_not_drawn(tmp_path: Path) -> None:
    frame = _frame(synthetic_report(batch_sizes=(8,), gpu_freqs_hz=(612e6,)))
    done = render_all(frame, tmp_path)
    assert [p.name for p in done.written] == ["cross_device.png"]
    assert sorted(tmp_path.iterdir()) == [tmp_path / "cross_device.png"]
    reasons = {n.plot: n.reason for n in done.notes}
    assert reasons == {
        "energy_topology": "no CPU frequency was pinned in these reports",
        "energy_vs_gpu_freq": "one GPU frequency per workload only (GPU 612 MHz);"
        " the plot needs two or more",
        "latency_power_vs_gpu_freq": "one GPU frequency per workload only (GPU 612 MHz);"
        " the plot needs two or more",
        "energy_vs_batch": "one batch size per workload only (batch 8); the plot needs two or more",
        "pareto": "one result per workload and batch size with both energy and latency;"
        " a front needs two or more",
    }
    assert plot_heatmap(frame, tmp_path / "h.png") is None
    assert not (tmp_path / "h.png").exists()


def test_empty_table_makes_nothing_and_says_so(tmp_path: Path) -> None:
    done = render_all(frame_from_rows([]), tmp_path)
    assert done.written == () and not any(tmp_path.iterdir())
    assert done.notes == tuple(PlotNote(n, "the reports hold no results") for n, _ in FIGURES)
    assert plot_cross_device(frame_from_rows([]), tmp_path / "c.png") is None


def test_notes_print_as_lines(tmp_path: Path) -> None:
    frame = _frame(_window_report("orin-nano", [None]))
    done = render_all(frame, tmp_path)
    assert done.lines() == [
        f"wrote {tmp_path / 'cross_device.png'}",
        "no plot written: energy_topology: no GPU frequency was pinned in these reports",
        "no plot written: energy_vs_gpu_freq: no GPU frequency was pinned in these reports",
        "no plot written: latency_power_vs_gpu_freq: no GPU frequency was pinned in these reports",
        "no plot written: energy_vs_batch: these results carry no batch size (no test took the"
        " batch_size parameter)",
        "no plot written: pareto: one result per workload and batch size with both energy and"
        " latency; a front needs two or more",
    ]


# -- results of the energy fixture (windows: energy_j, duration_s; no items) ---------------


@pytest.fixture(scope="module")
def windows() -> Any:
    freqs = (306e6, 612e6, 918e6)
    return _frame(_window_report("orin-nano", freqs, 1), _window_report("agx-orin", freqs, 2))


def test_energy_fixture_results_are_plotted_per_window(windows: Any, tmp_path: Path) -> None:
    done = render_all(windows, tmp_path)
    assert {p.stem for p in done.written} == {
        "cross_device",
        "energy_vs_gpu_freq",
        "latency_power_vs_gpu_freq",
        "pareto",
    }
    assert {n.plot for n in done.notes} == {"energy_topology", "energy_vs_batch"}

    fig = energy_vs_gpu_freq_figure(windows)
    (ax,) = _data_axes(fig)
    assert ax.get_ylabel() == "energy per window [J]"
    assert ax.get_title() == (
        "energy per window [J] vs GPU frequency: tests/test_decode.py::test_decode (simulated)"
    )
    assert [line.get_xdata().tolist() for line in _labelled_lines(ax)] == [[306, 612, 918]] * 2
    assert [t.split(": min")[0] for t in _legend(ax)] == [
        "sim:agx-orin (simulated)",
        "sim:orin-nano (simulated)",
    ]

    top, bottom = _data_axes(latency_power_vs_gpu_freq_figure(windows))
    assert top.get_ylabel() == "window duration [s]"
    assert bottom.get_ylabel() == "mean power [W]"
    assert len(_labelled_lines(top)) == len(_labelled_lines(bottom)) == 2
    assert max(top.get_lines()[0].get_ydata()) < 2  # seconds, not scaled as ms

    (ax,) = _data_axes(cross_device_figure(windows))
    assert ax.get_ylabel() == "lowest energy per window [J]"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tests/test_decode.py::test_decode"]

    (ax,) = _data_axes(pareto_figure(windows))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("window duration [s]", "energy per window [J]")


def test_per_item_energy_is_preferred_and_window_energy_drawn_beside_it(windows: Any) -> None:
    both = frame_from_rows(
        [*windows.to_dict("records"), *_frame(synthetic_report()).to_dict("records")]
    )
    fig = energy_vs_gpu_freq_figure(both, workload="resnet18")
    assert _data_axes(fig)[0].get_ylabel() == "energy per item [J]"
    per_item, per_window = _data_axes(cross_device_figure(both))
    assert per_item.get_ylabel() == "lowest energy per item [J]"
    assert [t.get_text() for t in per_item.get_xticklabels()] == ["mobilenet_v2", "resnet18"]
    assert per_window.get_ylabel() == "lowest energy per window [J]"
    assert [t.get_text() for t in per_window.get_xticklabels()] == [
        "tests/test_decode.py::test_decode"
    ]


# -- every device, every batch size, readable labels ---------------------------------------


def test_energy_vs_batch_draws_every_device_with_integer_batch_ticks() -> None:
    models = ("agx-orin", "nano", "orin-nano")
    frame = _frame(
        *(
            synthetic_report(sim_model=m, seed=i, workloads=("resnet18",),
                             batch_sizes=(8, 16, 32, 64))
            for i, m in enumerate(models)
        )
    )  # fmt: skip
    fig = energy_vs_batch_figure(frame)
    axes = _data_axes(fig)
    assert [ax.get_title() for ax in axes] == [f"sim:{m} (simulated)" for m in models]
    assert fig.get_suptitle() == "energy per item [J] vs batch size: resnet18 (simulated)"
    for ax in axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "16", "32", "64"]
        assert ax.get_xscale() == "log"  # doubling batch sizes evenly spaced
        assert _legend(ax) == ["gpu612MHz", "gpu918MHz"]
        for line in _labelled_lines(ax):
            assert line.get_xdata().tolist() == [8, 16, 32, 64]


@pytest.mark.skipif(not LOUDVA_CSV.exists(), reason="shared data not found")
def test_real_table_every_device_and_every_batch_size() -> None:
    frame = load_loudva_csv(LOUDVA_CSV)
    energy = frame[frame["metric"] == "energy_per_item"]
    batches = energy.groupby("device")["batch_size"].nunique().to_dict()
    assert batches == {"Jetson AGX Xavier": 128, "Jetson Nano": 13, "Jetson Xavier NX": 18}

    axes = _data_axes(energy_vs_batch_figure(frame))
    assert [ax.get_title() for ax in axes] == sorted(batches)
    for ax in axes:
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert all(t.isdigit() for t in ticks) and 2 <= len(ticks) <= 13
        sizes = set(energy[energy["device"] == ax.get_title()]["batch_size"])
        assert {int(t) for t in ticks} <= sizes
    nano = [t.get_text() for t in axes[1].get_xticklabels()]
    assert nano == [str(b) for b in range(1, 14)]

    fig = energy_vs_gpu_freq_figure(frame)
    axes = _data_axes(fig)
    assert [ax.get_title() for ax in axes] == sorted(batches)
    for ax in axes:
        assert len(_labelled_lines(ax)) == batches[ax.get_title()]
    bar = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bar) == 1 and bar[0].get_ylabel() == "batch size"

    axes = _data_axes(latency_power_vs_gpu_freq_figure(frame))
    assert len(axes) == 6  # latency and power per device
    for top, bottom in zip(axes[::2], axes[1::2], strict=True):
        assert len(_labelled_lines(top)) == len(_labelled_lines(bottom)) == batches[top.get_title()]

    # one batch size asked for: a line per device, in one panel, as in the README
    (ax,) = _data_axes(energy_vs_gpu_freq_figure(frame, batch_size=8))
    assert [t.split(": min")[0] for t in _legend(ax)] == sorted(batches)
    assert ax.get_title() == "energy per item [J] vs GPU frequency: loudva-profiling, batch 8"


def test_gpu_frequency_plots_draw_every_batch_size_of_one_device() -> None:
    frame = _frame(synthetic_report(workloads=("resnet18",), batch_sizes=(1, 4, 16)))
    (ax,) = _data_axes(energy_vs_gpu_freq_figure(frame))
    assert [t.split(": min")[0] for t in _legend(ax)] == ["batch 1", "batch 4", "batch 16"]
    assert ax.get_legend().get_title().get_text() == "batch size (star: minimum)"
    assert ax.get_title().endswith("resnet18, sim:agx-orin (simulated)")
    top, bottom = _data_axes(latency_power_vs_gpu_freq_figure(frame))
    assert _legend(top) == ["batch 1", "batch 4", "batch 16"]
    assert len(_labelled_lines(bottom)) == 3


def test_gpu_frequency_plots_draw_every_batch_size_of_every_device() -> None:
    frame = _topology_frame()
    fig = energy_vs_gpu_freq_figure(frame)
    axes = _data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["sim:agx-orin (simulated)", "sim:nano (simulated)"]
    assert fig.get_suptitle() == "energy per item [J] vs GPU frequency: resnet18 (simulated)"
    cpus = ("cpu729.6MHz", "cpu1.5104GHz", "cpu1.984GHz")  # a line each: never a mean
    for ax in axes:
        assert [t.split(": min")[0] for t in _legend(ax)] == [
            f"batch {b}, {c}" for b in (8, 16) for c in cpus
        ]
        assert ax.get_legend().get_title().get_text() == "batch size, other knobs (star: minimum)"


def test_legends_show_short_operating_point_labels() -> None:
    report = synthetic_report(workloads=("resnet18",), gpu_freqs_hz=(612e6, 918e6))
    for test in report["tests"]:
        point = test["params"]["operating_point"]
        point["requested"] = _requested(power_mode="15W", **point["requested"])
    frame = _frame(report)
    texts = []
    for build in (energy_vs_batch_figure, energy_vs_gpu_freq_figure, pareto_figure):
        fig = build(frame)
        texts += [t for ax in fig.axes for t in _legend(ax)]
    assert "15W gpu612MHz" in texts and "15W gpu918MHz" in texts
    assert not [t for t in texts if "null" in t or "=" in t or "None" in t]


def test_virtual_boards_are_labelled_simulated_and_real_ones_not(windows: Any) -> None:
    for name, build in FIGURES:
        if name in ("energy_topology", "energy_vs_batch"):
            continue
        fig = build(windows)
        titles = [fig.get_suptitle(), *(ax.get_title() for ax in fig.axes)]
        assert any("(simulated)" in t for t in titles), name
    if LOUDVA_CSV.exists():
        fig = energy_vs_gpu_freq_figure(load_loudva_csv(LOUDVA_CSV))
        titles = [fig.get_suptitle(), *(ax.get_title() for ax in fig.axes)]
        assert not any("simulated" in t for t in titles)


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
