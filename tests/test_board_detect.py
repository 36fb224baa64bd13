"""Whole-board detection and the ``board --json`` contract on real file trees."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

from pytest_edgeenergy.board.detect import (
    NoRailsFound,
    board_json,
    detect,
    read_power_mode_status,
)
from pytest_edgeenergy.board.nvpmodel import parse_conf

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"

ORIN_NANO_CONF = """\
< PARAM TYPE=CLOCK NAME=GPU >
MAX_FREQ /sys/devices/platform/17000000.gpu/devfreq_dev/max_freq
< PARAM TYPE=FILE NAME=TPC_POWER_GATING >
TPC_PG_MASK /sys/devices/platform/gpu.0/tpc_pg_mask
< POWER_MODEL ID=0 NAME=15W >
GPU MAX_FREQ 612000000
TPC_POWER_GATING TPC_PG_MASK 0
< POWER_MODEL ID=1 NAME=25W >
GPU MAX_FREQ 918000000
TPC_POWER_GATING TPC_PG_MASK 0
< POWER_MODEL ID=2 NAME=MAXN_SUPER >
GPU MAX_FREQ -1
TPC_POWER_GATING TPC_PG_MASK 0
< PM_CONFIG DEFAULT=2 >
"""


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def link(link_path: Path, target: Path) -> None:
    link_path.parent.mkdir(parents=True, exist_ok=True)
    link_path.symlink_to(os.path.relpath(target, link_path.parent))


def orin_nano_tree(root: Path) -> None:
    """A small but complete Orin Nano Super (L4T 36.4.7) tree."""
    release = SAMPLES / "nv_tegra_release_r36.txt"
    if release.is_file():
        first_line = release.read_text().splitlines()[1]
    else:
        first_line = "# R36 (release), REVISION: 4.7, GCID: 42132812, BOARD: generic"
    write(root / "etc/nv_tegra_release", first_line + "\n")
    write(
        root / "proc/device-tree/model",
        b"NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super\0",
    )
    write(
        root / "proc/device-tree/compatible",
        b"nvidia,p3768-0000+p3767-0005\0nvidia,p3767-0005\0nvidia,tegra234\0",
    )
    write(root / "proc/sys/kernel/osrelease", "5.15.148-tegra\n")
    write(root / "proc/meminfo", "MemTotal: 7802548 kB\nMemAvailable: 6000000 kB\n")
    dev = root / "sys/devices/platform/bus@0/c240000.i2c/i2c-1/1-0040"
    write(dev / "name", "ina3221\n")
    link(root / "sys/bus/i2c/devices/1-0040", dev)
    link(root / "sys/bus/i2c/drivers/ina3221/1-0040", dev)
    hwmon = dev / "hwmon/hwmon3"
    for n, label in enumerate(["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"], start=1):
        write(hwmon / f"in{n}_label", label + "\n")
        write(hwmon / f"in{n}_input", "5000\n")
        write(hwmon / f"curr{n}_input", "900\n")
    write(hwmon / "in7_label", "sum of shunt voltages\n")
    write(hwmon / "update_interval", "33\n")
    cpu = root / "sys/devices/system/cpu"
    write(cpu / "present", "0-5\n")
    write(cpu / "online", "0-5\n")
    for n in range(6):
        write(cpu / f"cpu{n}/online", "1\n")
    gpu_dev = root / "sys/devices/platform/bus@0/17000000.gpu"
    devfreq = gpu_dev / "devfreq/17000000.gpu"
    write(devfreq / "available_frequencies", "306000000 612000000 1020000000\n")
    write(devfreq / "cur_freq", "306000000\n")
    write(gpu_dev / "of_node/name", "gpu\0")
    link(devfreq / "device", gpu_dev)
    link(root / "sys/class/devfreq/17000000.gpu", devfreq)
    write(root / "etc/nvpmodel.conf", ORIN_NANO_CONF)
    write(root / "var/lib/nvpmodel/status", "pmode:0002 fmode:quiet\n")


def test_detect_orin_nano_and_json_contract(tmp_path: Path) -> None:
    orin_nano_tree(tmp_path)
    board = detect(tmp_path)
    assert board.identity.soc == "tegra234" and board.identity.jetpack == "6.2.1"
    assert board.rails.total_rail == "VDD_IN"
    assert board.nvpmodel is not None and board.nvpmodel.default_id == 2
    assert board.power_mode is not None
    assert (board.power_mode.id, board.power_mode.name) == (2, "MAXN_SUPER")
    assert board.require_rails() is board.rails

    data = json.loads(json.dumps(board_json(board)))
    assert {"identity", "rails", "total", "knobs", "power_modes"} <= set(data)
    identity = data["identity"]
    assert {k: identity[k] for k in ("model", "soc", "l4t", "jetpack", "simulated")} == {
        "model": "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super",
        "soc": "tegra234",
        "l4t": "36.4.7",
        "jetpack": "6.2.1",
        "simulated": False,
    }
    assert identity["module"] == "p3767-0005"
    assert [r["name"] for r in data["rails"]] == ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]
    vdd_in = data["rails"][0]
    assert vdd_in == {
        "name": "VDD_IN",
        "is_total": True,
        "chip": "ina3221",
        "layout": "hwmon",
        "device": "1-0040",
        "channel": 1,
        "directory": "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3",
        "files": [
            "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3/in1_input",
            "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3/curr1_input",
        ],
        "unit": "W via mV*mA",
    }
    assert [r["is_total"] for r in data["rails"]] == [True, False, False]
    assert data["total"]["rail"] == "VDD_IN" and data["total"]["method"] == "rail"
    assert data["power_modes"] == [
        {"id": 0, "name": "15W"},
        {"id": 1, "name": "25W"},
        {"id": 2, "name": "MAXN_SUPER"},
    ]
    assert data["default_power_mode"] == 2
    assert data["current_power_mode"] == {"id": 2, "name": "MAXN_SUPER"}
    assert data["update_interval_ms"] == 33.0
    knobs = data["knobs"]
    assert knobs["cpu"]["online"] == [0, 1, 2, 3, 4, 5]
    assert knobs["gpu"]["available_freqs_hz"] == [306_000_000, 612_000_000, 1_020_000_000]
    assert knobs["gpu"]["path"] == "sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu"
    assert knobs["memory"]["mem_total_bytes"] == 7802548 * 1024


def test_sum_board_json_total_note(tmp_path: Path) -> None:
    dev = tmp_path / "sys/bus/i2c/devices/1-0040"
    write(dev / "name", "ina3221x\n")
    for n, label in enumerate(["GPU", "CPU", "SOC"]):
        write(dev / f"iio:device0/rail_name_{n}", label + "\n")
        write(dev / f"iio:device0/in_power{n}_input", "100\n")
    data = board_json(detect(tmp_path))
    assert data["total"] == {
        "rail": None,
        "method": "sum",
        "note": "no module-input rail on this board: total is the sum of all rails",
    }
    assert data["rails"][0]["unit"] == "W via mW"
    assert data["rails"][0]["files"] == ["sys/bus/i2c/devices/1-0040/iio:device0/in_power0_input"]
    assert data["update_interval_ms"] is None


def test_empty_root_still_detects(tmp_path: Path) -> None:
    board = detect(tmp_path)
    assert board.rails.rails == ()
    assert board.identity.model is None
    assert board.nvpmodel is None and board.power_mode is None
    assert any("no INA3221/INA238 power rails" in n for n in board.notes)
    with pytest.raises(NoRailsFound) as info:
        board.require_rails()
    assert str(tmp_path / "sys/bus/i2c/drivers/ina3221") in str(info.value)
    data = json.loads(json.dumps(board_json(board)))
    assert data["rails"] == [] and data["power_modes"] == []
    assert data["total"]["rail"] is None and data["total"]["method"] == "sum"
    assert data["identity"]["simulated"] is False


def test_broken_nvpmodel_conf_becomes_a_note(tmp_path: Path) -> None:
    write(tmp_path / "etc/nvpmodel.conf", "< POWER_MODEL ID=zero NAME=X >\n")
    write(tmp_path / "var/lib/nvpmodel/status", "pmode:0001 fmode:fanNull\n")
    board = detect(tmp_path)
    assert board.nvpmodel is None
    note = next(n for n in board.notes if n.startswith("nvpmodel.conf ignored"))
    assert "nvpmodel.conf:1:" in note and "not an integer" in note
    # The status id is still known, just not its name.
    assert board.power_mode is not None
    assert (board.power_mode.id, board.power_mode.name) == (1, None)


def test_nvpmodel_conf_error_is_a_field(tmp_path: Path) -> None:
    """The control layer reads the parse error from a field, not from the note's text."""
    write(tmp_path / "etc/nvpmodel.conf", "< POWER_MODEL ID=zero NAME=X >\n")
    board = detect(tmp_path)
    assert board.nvpmodel_conf_error is not None
    assert "nvpmodel.conf:1:" in board.nvpmodel_conf_error
    assert f"nvpmodel.conf ignored: {board.nvpmodel_conf_error}" in board.notes
    write(tmp_path / "etc/nvpmodel.conf", ORIN_NANO_CONF)
    assert detect(tmp_path).nvpmodel_conf_error is None
    (tmp_path / "etc/nvpmodel.conf").unlink()
    assert detect(tmp_path).nvpmodel_conf_error is None


def test_power_mode_status_garbage(tmp_path: Path) -> None:
    conf = parse_conf(ORIN_NANO_CONF)
    assert read_power_mode_status(tmp_path, conf) is None
    write(tmp_path / "var/lib/nvpmodel/status", "garbage\n")
    assert read_power_mode_status(tmp_path, conf) is None
    write(tmp_path / "var/lib/nvpmodel/status", "pmode:0007 fmode:fanNull\n")
    mode = read_power_mode_status(tmp_path, conf)
    assert mode is not None and (mode.id, mode.name) == (7, None)


SIM_EXPECTED = {
    "nano": ("POM_5V_IN", "rail"),
    "tx2": ("VDD_IN", "rail"),
    "xavier-nx": ("VDD_IN", "rail"),
    "agx-xavier": (None, "sum"),
    "orin-nano": ("VDD_IN", "rail"),
    "orin-nx": ("VDD_IN", "rail"),
    "agx-orin": (None, "sum"),
    "thor": ("VIN", "rail"),
}


@pytest.mark.parametrize("model", sorted(SIM_EXPECTED))
def test_virtual_boards_total_rail(tmp_path: Path, model: str) -> None:
    try:
        tree = importlib.import_module("pytest_edgeenergy.sim.tree")
    except ModuleNotFoundError as exc:
        if exc.name != "pytest_edgeenergy.sim.tree":
            raise
        pytest.skip("pytest_edgeenergy.sim.tree (virtual boards) is not written yet")
    tree.create(model, tmp_path)
    board = detect(tmp_path)
    expected_rail, expected_method = SIM_EXPECTED[model]
    assert board.rails.rails, f"{model}: no rails discovered"
    assert board.rails.total_rail == expected_rail
    assert board.rails.total_method == expected_method
    assert board.identity.simulated is True
    assert board.identity.sim_model == model
    data = board_json(board)
    assert data["total"]["method"] == expected_method
    assert json.dumps(data)
