"""Rail discovery on real file trees laid out like each Jetson generation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_edgeenergy.board.rails import (
    SUM_NOTE,
    NoRailsFound,
    discover_rails,
    is_not_connected,
    require_rails,
)
from pytest_edgeenergy.board.types import RailMap


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def link(link_path: Path, target: Path) -> None:
    """Relative symlink, as sysfs has (``../../../devices/...``)."""
    link_path.parent.mkdir(parents=True, exist_ok=True)
    link_path.symlink_to(os.path.relpath(target, link_path.parent))


def i2c_device(root: Path, device: str, driver: str, name: str | None = None) -> Path:
    """A device dir under sys/devices with bus/devices and bus/drivers symlinks to it."""
    bus = device.split("-")[0]
    dev = root / f"sys/devices/platform/bus@0/c240000.i2c/i2c-{bus}/{device}"
    dev.mkdir(parents=True)
    write(dev / "name", (name or driver) + "\n")
    link(root / "sys/bus/i2c/devices" / device, dev)
    link(root / "sys/bus/i2c/drivers" / driver / device, dev)
    return dev


def iio_chip(root: Path, device: str, labels: list[str], index: int = 0) -> Path:
    dev = i2c_device(root, device, "ina3221x")
    iio = dev / f"iio:device{index}"
    for channel, label in enumerate(labels):
        write(iio / f"rail_name_{channel}", label + "\n")
        write(iio / f"in_voltage{channel}_input", "5000\n")
        write(iio / f"in_current{channel}_input", "100\n")
        write(iio / f"in_power{channel}_input", "500\n")
        write(iio / f"warn_current_limit_{channel}", "32760\n")
    return iio


def hwmon_chip(
    root: Path, device: str, labels: list[str], index: int, update_interval_ms: int | None = None
) -> Path:
    dev = i2c_device(root, device, "ina3221")
    hwmon = dev / "hwmon" / f"hwmon{index}"
    write(hwmon / "name", "ina3221\n")
    for n, label in enumerate(labels, start=1):
        write(hwmon / f"in{n}_label", label + "\n")
        write(hwmon / f"in{n}_input", "5000\n")
        write(hwmon / f"curr{n}_input", "100\n")
        write(hwmon / f"curr{n}_max", "1000\n")
        write(hwmon / f"in{n + 3}_input", "400\n")  # shunt µV
    write(hwmon / "in7_label", "sum of shunt voltages\n")
    write(hwmon / "in7_input", "1200\n")
    write(hwmon / "samples", "512\n")
    if update_interval_ms is not None:
        write(hwmon / "update_interval", f"{update_interval_ms}\n")
    return hwmon


def ina238_chip(root: Path, device: str, index: int, *, power: bool = True) -> Path:
    dev = i2c_device(root, device, "ina238")
    hwmon = dev / "hwmon" / f"hwmon{index}"
    write(hwmon / "name", "ina238\n")
    write(hwmon / "in0_input", "12\n")
    write(hwmon / "in1_input", "48000\n")
    write(hwmon / "curr1_input", "900\n")
    if power:
        write(hwmon / "power1_input", "43200000\n")
    return hwmon


def rel(rail_files: tuple[Path, ...], root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in rail_files]


def test_nano_iio(tmp_path: Path) -> None:
    iio_chip(tmp_path, "6-0040", ["POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"])
    rails = discover_rails(tmp_path)
    assert rails.names == ("POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU")
    assert rails.total_rail == "POM_5V_IN" and rails.total_method == "rail"
    assert [r.is_total for r in rails.rails] == [True, False, False]
    first = rails.rails[0]
    assert (first.chip, first.layout, first.device, first.channel) == (
        "ina3221",
        "iio",
        "6-0040",
        0,
    )
    assert first.power_scale_w == 1e-3
    # Found through bus/drivers (symlink), deduplicated against bus/devices.
    assert rel(first.files, tmp_path) == [
        "sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0/in_power0_input"
    ]
    assert rails.update_interval_s is None
    assert rails.notes == ()


def test_iio_without_power_file_uses_voltage_and_current(tmp_path: Path) -> None:
    iio = iio_chip(tmp_path, "7-0040", ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"])
    (iio / "in_power1_input").unlink()
    rails = discover_rails(tmp_path)
    cpu = rails.rails[1]
    assert cpu.power_file is None
    assert [p.name for p in cpu.files] == ["in_voltage1_input", "in_current1_input"]
    assert rails.total_rail == "VDD_IN"


def test_agx_xavier_two_iio_chips_sum_with_note(tmp_path: Path) -> None:
    iio_chip(tmp_path, "1-0041", ["CV", "VDDRQ", "SYS5V"], index=1)
    iio_chip(tmp_path, "1-0040", ["GPU", "CPU", "SOC"], index=0)
    rails = discover_rails(tmp_path)
    assert rails.names == ("GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V")
    assert [r.device for r in rails.rails] == ["1-0040"] * 3 + ["1-0041"] * 3
    assert rails.total_rail is None and rails.total_method == "sum"
    assert not any(r.is_total for r in rails.rails)
    assert SUM_NOTE in rails.notes


@pytest.mark.parametrize("index", [1, 6])
def test_orin_nano_hwmon_any_index(tmp_path: Path, index: int) -> None:
    hwmon_chip(tmp_path, "1-0040", ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"], index, 33)
    rails = discover_rails(tmp_path)
    assert rails.names == ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")
    assert [r.channel for r in rails.rails] == [1, 2, 3]
    total = rails.rails[0]
    assert total.is_total and rails.total_rail == "VDD_IN"
    assert total.layout == "hwmon" and total.power_file is None
    assert rel(total.files, tmp_path) == [
        f"sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon{index}/in1_input",
        f"sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon{index}/curr1_input",
    ]
    assert rails.update_interval_s == pytest.approx(0.033)
    assert rails.notes == ()


def test_agx_orin_nc_and_sum_of_shunt_skipped(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "1-0040", ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"], 2, 20)
    hwmon_chip(tmp_path, "1-0041", ["NC", "VDDQ_VDD2_1V8AO", "NC"], 3, 40)
    rails = discover_rails(tmp_path)
    assert rails.names == ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO")
    assert rails.rails[3].channel == 2
    # VIN_SYS_5V0 is the 5 V system rail, not the module input.
    assert rails.total_rail is None and rails.total_method == "sum"
    assert rails.notes == (SUM_NOTE,)
    assert rails.update_interval_s == pytest.approx(0.040)
    assert all(r.channel in (1, 2, 3) for r in rails.rails)


def test_thor_ina3221_and_ina238_vin_total(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "2-0040", ["VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0"], 4)
    ina238_chip(tmp_path, "2-0044", 6)
    rails = discover_rails(tmp_path)
    assert rails.names == ("VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN")
    vin = rails.rails[3]
    assert (vin.chip, vin.layout, vin.device, vin.channel) == ("ina238", "hwmon", "2-0044", 1)
    assert vin.is_total and rails.total_rail == "VIN"
    assert vin.power_scale_w == 1e-6
    assert rel(vin.files, tmp_path) == [
        "sys/bus/i2c/drivers/ina238/2-0044/hwmon/hwmon6/power1_input"
    ]


def test_ina238_label_and_no_power_file(tmp_path: Path) -> None:
    hwmon = ina238_chip(tmp_path, "2-0045", 7, power=False)
    write(hwmon / "in1_label", "VIN_MAIN\n")
    rails = discover_rails(tmp_path)
    assert rails.names == ("VIN_MAIN",)
    assert [p.name for p in rails.rails[0].files] == ["in1_input", "curr1_input"]
    # Named other than VIN: not a known module-input rail.
    assert rails.total_rail is None


def test_total_preference_vin_over_pom_over_vdd_in(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "1-0040", ["VDD_IN", "POM_5V_IN", "X"], 1)
    assert discover_rails(tmp_path).total_rail == "POM_5V_IN"
    ina238_chip(tmp_path, "1-0044", 2)
    assert discover_rails(tmp_path).total_rail == "VIN"


def test_duplicate_names_across_chips_are_disambiguated(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "1-0040", ["VDD_IN", "VDD_GPU", "VDD_SOC"], 1)
    hwmon_chip(tmp_path, "1-0041", ["VDD_GPU", "VDD_CPU", "VDD_GPU"], 2)
    rails = discover_rails(tmp_path)
    assert rails.names == (
        "VDD_IN",
        "VDD_GPU@1-0040",
        "VDD_SOC",
        "VDD_GPU@1-0041:1",
        "VDD_CPU",
        "VDD_GPU@1-0041:3",
    )
    assert len(set(rails.names)) == len(rails.names)
    assert any("VDD_GPU appears on 3 channels" in n for n in rails.notes)
    assert rails.total_rail == "VDD_IN"


def test_duplicate_total_rail_name_keeps_first_as_total(tmp_path: Path) -> None:
    iio_chip(tmp_path, "0-0040", ["VDD_IN", "VDD_CPU", "VDD_GPU"])
    iio_chip(tmp_path, "0-0041", ["VDD_IN", "VDD_SOC", "VDD_DDR"], index=1)
    rails = discover_rails(tmp_path)
    assert rails.total_rail == "VDD_IN@0-0040"
    assert [r.name for r in rails.rails if r.is_total] == ["VDD_IN@0-0040"]


def test_missing_and_garbage_files_are_skipped_with_notes(tmp_path: Path) -> None:
    hwmon = hwmon_chip(tmp_path, "1-0040", ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"], 1)
    (hwmon / "curr2_input").unlink()
    write(hwmon / "in3_label", "\n")
    write(hwmon / "update_interval", "garbage\n")
    iio = iio_chip(tmp_path, "6-0040", ["POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"])
    for name in ("in_power2_input", "in_voltage2_input"):
        (iio / name).unlink()
    i2c_device(tmp_path, "1-0042", "ina3221")  # bound but no hwmon dir
    write(tmp_path / "sys/bus/i2c/drivers/ina3221/uevent", "DRIVER=ina3221\n")
    rails = discover_rails(tmp_path)
    assert rails.names == ("VDD_IN", "POM_5V_IN", "POM_5V_GPU")
    assert rails.update_interval_s is None
    notes = "\n".join(rails.notes)
    assert "rail VDD_CPU_GPU_CV" in notes and "curr2_input" in notes
    assert "channel 3: no in3_label" in notes
    assert "rail POM_5V_CPU" in notes
    assert "device 1-0042" in notes
    # VDD_IN and POM_5V_IN both present: POM_5V_IN is preferred.
    assert rails.total_rail == "POM_5V_IN"


def test_disabled_hwmon_channel_is_skipped(tmp_path: Path) -> None:
    hwmon = hwmon_chip(tmp_path, "1-0040", ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"], 1)
    write(hwmon / "in3_enable", "0\n")
    rails = discover_rails(tmp_path)
    assert rails.names == ("VDD_IN", "VDD_CPU_GPU_CV")
    assert any("disabled" in n for n in rails.notes)


def test_plain_directories_without_symlinks(tmp_path: Path) -> None:
    # Only bus/devices with a name file (no drivers dir), as a hand-made tree might have.
    dev = tmp_path / "sys/bus/i2c/devices/1-0040"
    write(dev / "name", "ina3221\n")
    hwmon = dev / "hwmon/hwmon0"
    write(hwmon / "in1_label", "VDD_IN\n")
    write(hwmon / "in1_input", "5000\n")
    write(hwmon / "curr1_input", "1000\n")
    write(tmp_path / "sys/bus/i2c/devices/0-0050/name", "eeprom\n")
    rails = discover_rails(tmp_path)
    assert rails.names == ("VDD_IN",)
    assert rails.rails[0].directory == hwmon


def test_device_ordering_is_numeric(tmp_path: Path) -> None:
    hwmon_chip(tmp_path, "10-0040", ["C"], 3)
    hwmon_chip(tmp_path, "2-0041", ["B"], 2)
    hwmon_chip(tmp_path, "2-0040", ["A"], 1)
    assert discover_rails(tmp_path).names == ("A", "B", "C")


def test_not_connected_labels() -> None:
    assert is_not_connected("NC")
    assert is_not_connected(" nc ")
    assert is_not_connected("NC_1")
    assert not is_not_connected("VDD_SYNC")
    assert not is_not_connected("VIN_SYS_5V0")


def test_no_rails(tmp_path: Path) -> None:
    rails = discover_rails(tmp_path)
    assert rails == RailMap(rails=(), total_rail=None, update_interval_s=None, notes=())
    with pytest.raises(NoRailsFound) as info:
        require_rails(rails, tmp_path)
    message = str(info.value)
    assert str(tmp_path) in message
    assert str(tmp_path / "sys/bus/i2c/devices") in message
    assert str(tmp_path / "sys/bus/i2c/drivers/ina238") in message
    assert isinstance(info.value, OSError)
    hwmon_chip(tmp_path, "1-0040", ["VDD_IN"], 1)
    found = discover_rails(tmp_path)
    assert require_rails(found, tmp_path) is found
