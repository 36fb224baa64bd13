"""The LoudVA profiling table through the same compare and plot code as our reports.

Findings checked against the real data (Jetson AGX Xavier, Xavier NX, Nano; one workload;
GPU frequency x batch size sweeps):
* energy per item has its minimum at a non-extreme GPU frequency on every device at every
  batch size profiled; at batch 8: Nano 614.4 MHz (the inference study's ~614 MHz),
  Xavier NX 1007.25 MHz (a single low point on a curve flat from ~700 MHz), AGX Xavier
  1032.75 MHz, each 8-19 % below the top frequency;
* energy per item falls with batch size at every GPU frequency on every device.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.present.compare import Source, compare_table
from pytest_edgeenergy.present.plots import render_loudva_figures
from pytest_edgeenergy.report.external import load_loudva_csv, loudva_reports
from pytest_edgeenergy.report.load import LONG_COLUMNS, ReportError

SHARED = Path(__file__).resolve().parent / "shared"
CSV = SHARED / "data" / "jetson_gpufreq_batch_profiling_loudva.csv"

pytestmark = pytest.mark.skipif(not CSV.exists(), reason=f"shared data not found at {CSV}")


@pytest.fixture(scope="module")
def frame() -> Any:
    return load_loudva_csv(CSV)


def _energy(frame: Any) -> Any:
    return frame[frame["metric"] == "energy_per_item"]


def test_long_format_and_units(frame: Any) -> None:
    assert list(frame.columns) == list(LONG_COLUMNS)
    assert set(frame["device"]) == {"Jetson AGX Xavier", "Jetson Xavier NX", "Jetson Nano"}
    assert not frame["simulated"].any()
    assert set(frame.groupby("metric")["unit"].first().items()) == {
        ("energy_j", "J"),
        ("energy_per_item", "J/item"),
        ("latency_mean", "s"),
        ("throughput", "items/s"),
        ("power_mean", "W"),
        ("edp", "J·s"),
    }
    assert len(_energy(frame)) == 2185  # one per data row
    # first data row: AGX, batch 1, 1377 MHz, Energy 0.5974 J, Latency 0.027193 s
    first = frame[(frame["test_id"].str.contains("AGX")) & (frame["batch_size"] == 1)]
    first = first[first["gpu_freq_hz"] == 1377e6].set_index("metric")["value"]
    assert first["energy_per_item"] == pytest.approx(0.59740791174)
    assert first["power_mean"] == pytest.approx(0.59740791174 / 0.027193)


def test_energy_minimum_is_at_a_moderate_gpu_frequency(frame: Any) -> None:
    energy = _energy(frame)
    minima = {}
    for (device, batch), part in energy.groupby(["device", "batch_size"]):
        series = part.set_index("gpu_freq_hz")["value"].sort_index()
        best = series.idxmin()
        assert series.index[0] < best < series.index[-1], (device, batch, best)
        if batch == 8:
            minima[device] = (best, 1 - series.min() / series.iloc[-1])
    assert minima["Jetson Nano"][0] == 614.4e6
    assert minima["Jetson Xavier NX"][0] == 1007.25e6
    assert minima["Jetson AGX Xavier"][0] == 1032.75e6
    for device, (_, saving) in minima.items():
        assert 0.05 < saving < 0.25, device


def test_energy_per_item_falls_with_batch_size(frame: Any) -> None:
    energy = _energy(frame)
    for (device, freq), part in energy.groupby(["device", "gpu_freq_hz"]):
        series = part.set_index("batch_size")["value"].sort_index()
        assert series.iloc[-1] < series.iloc[0], (device, freq)
        rho = series.reset_index().corr(method="spearman").iloc[0, 1]
        assert rho < -0.4, (device, freq, rho)
    for device, part in energy.groupby("device"):
        best_freq = part.groupby("gpu_freq_hz")["value"].mean().idxmin()
        series = part[part["gpu_freq_hz"] == best_freq].set_index("batch_size")["value"]
        assert series.iloc[-1] < 0.75 * series.loc[1], device  # > 25 % less than batch 1


def test_same_compare_code_renders_it() -> None:
    reports = loudva_reports(CSV)
    assert [r["device"]["model"] for r in reports] == [
        "NVIDIA Jetson AGX Xavier",
        "NVIDIA Jetson Xavier NX",
        "NVIDIA Jetson Nano",
    ]
    assert len({r["device"]["fingerprint"] for r in reports}) == 3
    table = compare_table([Source(r["settings"]["directory"], r) for r in reports])
    assert len(table.rows) == sum(len(r["tests"]) for r in reports)
    assert not any("(simulated)" in str(cell) for row in table.rows for cell in row)
    assert any("latency mean where latency p90 was not measured" in n for n in table.notes)


def test_readme_figures(tmp_path: Path) -> None:
    made = render_loudva_figures(CSV, tmp_path)
    assert [p.name for p in made] == ["loudva_energy_vs_gpufreq.png", "loudva_energy_vs_batch.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in made)


def test_bad_tables_are_named(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b\n1,2\n")
    with pytest.raises(ReportError, match=r"wrong.csv: not a LoudVA profiling table: missing"):
        loudva_reports(wrong)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "# source: x\nThroughput,Energy,Latency,Batch Size,Frequency,Directory\n"
        "1,2,0.1,4,100,Nano\n1,zero,0.1,4,100,Nano\n"
    )
    with pytest.raises(ReportError, match=r"bad.csv: line 4: Energy 'zero' is not a number"):
        loudva_reports(bad)
