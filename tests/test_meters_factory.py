"""open_source: choosing and opening a power source for a detected board."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_edgeenergy.board.detect import detect
from pytest_edgeenergy.meters.factory import builtin_source_names, is_virtual_board, open_source
from pytest_edgeenergy.meters.ina import InaSource
from pytest_edgeenergy.meters.meter import Meter
from pytest_edgeenergy.meters.source import SourceUnavailable

SHARED = Path(__file__).resolve().parent / "shared"
AGX_ORIN_RAILS = SHARED / "reference" / "samples" / "ina3221_agx-orin_rails.md"
DRIVERS = "sys/bus/i2c/drivers/ina3221"


def hwmon_chip(root: Path, device: str, hwmon: str, labels: list[str]) -> None:
    """An upstream INA3221 hwmon directory with one (label, 5 V, 100 mA x n) per channel."""
    d = root / DRIVERS / device / "hwmon" / hwmon
    d.mkdir(parents=True)
    (root / DRIVERS / device / "name").write_text("ina3221\n")
    for ch, label in enumerate(labels, start=1):
        (d / f"in{ch}_label").write_text(label + "\n")
        (d / f"in{ch}_input").write_text("5000\n")
        (d / f"curr{ch}_input").write_text(f"{100 * ch}\n")
    (d / "in7_label").write_text("sum of shunt voltages\n")
    (d / "in7_input").write_text("120\n")


def agx_orin_channels() -> dict[str, list[str]]:
    """Rail names per I2C address, read from the reference sample as it is."""
    if not AGX_ORIN_RAILS.is_file():
        pytest.skip(f"reference sample missing: {AGX_ORIN_RAILS}")
    text = AGX_ORIN_RAILS.read_text()
    chips: dict[str, list[str]] = {}
    for section in re.split(r"rail names for I2C address ", text)[1:]:
        address = section[:4]
        rows = re.findall(r"\|\s*Channel (\d)\s*\|\s*`([^`]+)`", section.split("#")[0])
        chips[address] = [name for _, name in sorted(rows)]
    return chips


def test_unknown_name_lists_the_allowed_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="allowed: auto, ina, jtop, nvml, rapl, tegrastats"):
        open_source("ina3221", detect(tmp_path), interval_s=0.01)
    assert builtin_source_names() == ("auto", "ina", "jtop", "nvml", "rapl", "tegrastats")


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_bad_interval_is_refused(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="interval_s"):
        open_source("ina", detect(tmp_path), interval_s=bad)


def test_ina_on_an_orin_nano_tree(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "1-0040", "hwmon3", ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"])
    src = open_source("ina", detect(tmp_path), interval_s=0.01)
    try:
        assert isinstance(src, InaSource)
        assert src.channels == ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")
        assert src.total_channel == "VDD_IN" and src.total_method == "rail"
        assert src.simulated is False
        assert list(src.read()) == pytest.approx([0.5, 1.0, 1.5])
    finally:
        src.close()


def test_virtual_board_marker_makes_the_source_simulated(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "1-0040", "hwmon1", ["VDD_IN", "VDD_SOC"])
    assert not is_virtual_board(tmp_path)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "edgeenergy-virtual-board.json").write_text('{"simulated": true}')
    assert is_virtual_board(tmp_path)
    src = open_source("auto", detect(tmp_path), interval_s=0.01)
    try:
        assert src.name == "ina" and src.simulated is True
    finally:
        src.close()


def test_auto_on_agx_orin_rails_from_the_reference_sample(tmp_path: Path) -> None:
    chips = agx_orin_channels()
    assert chips["0x40"] == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"]
    hwmon_chip(tmp_path, "1-0040", "hwmon1", chips["0x40"])
    hwmon_chip(tmp_path, "1-0041", "hwmon2", chips["0x41"])
    with Meter(open_source("auto", detect(tmp_path), interval_s=0.01), interval_s=0.01) as meter:
        src = meter.source
        assert src.name == "ina"
        assert "NC" not in src.channels
        assert set(src.channels) == {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}
        # AGX Orin has no module-input rail: the total is a sum, and says so.
        assert src.total_channel is None and src.total_method == "sum"
        doc = meter.begin("x").end().to_json()
    assert doc["total"]["method"] == "sum" and doc["total"]["rail"] is None


def test_auto_with_nothing_says_why_each_candidate_failed(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable) as info:
        open_source("auto", detect(tmp_path), interval_s=0.01)
    msg = str(info.value)
    assert "ina: no INA3221/INA238 power rails found" in msg
    assert "rapl: no " in msg
    assert "nvml: not tried" in msg


def test_ina_without_rails_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match="no INA3221/INA238 power rails"):
        open_source("ina", detect(tmp_path), interval_s=0.01)


def rapl_zone(root: Path, zone: str, name: str, energy_uj: int) -> None:
    d = root / "sys/class/powercap" / zone
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    (d / "max_energy_range_uj").write_text("262143328850\n")


def test_auto_falls_back_to_rapl_when_there_are_no_rails(tmp_path: Path) -> None:
    rapl_zone(tmp_path, "intel-rapl:0", "package-0", 1_000_000)
    rapl_zone(tmp_path, "intel-rapl:0:0", "core", 400_000)
    src = open_source("AUTO", detect(tmp_path), interval_s=0.01)
    try:
        assert src.name == "rapl"
        assert src.quantity == "energy_j"
        assert list(src.read()) == pytest.approx([1.0, 0.4])
    finally:
        src.close()
