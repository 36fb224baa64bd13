"""Virtual board trees: layout, identity, rails as real readers (jetson-stats) see them."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from pytest_edgeenergy.board.nvpmodel import parse_conf
from pytest_edgeenergy.sim.files import LIVE_WIDTH, write_knob
from pytest_edgeenergy.sim.models import MODEL_NAMES, NC, UnknownBoardModel, get_model
from pytest_edgeenergy.sim.railfiles import rail_files
from pytest_edgeenergy.sim.runner import Animator
from pytest_edgeenergy.sim.tree import TreeNotEmpty, create
from pytest_edgeenergy.sim.truth import read_truth

SHARED = Path(__file__).resolve().parent / "shared"

# Rails per board as the project's reference table names them (NC channels included).
EXPECTED_CHANNELS = {
    "nano": {"6-0040": ["POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"]},
    "tx2": {
        "0-0040": ["VDD_GPU", "VDD_SOC", "VDD_WIFI"],
        "0-0041": ["VDD_IN", "VDD_CPU", "VDD_DDR"],
    },
    "xavier-nx": {"7-0040": ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]},
    "agx-xavier": {"1-0040": ["GPU", "CPU", "SOC"], "1-0041": ["CV", "VDDRQ", "SYS5V"]},
    "orin-nano": {"1-0040": ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]},
    "orin-nx": {"1-0040": ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]},
    "agx-orin": {
        "1-0040": ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"],
        "1-0041": ["NC", "VDDQ_VDD2_1V8AO", "NC"],
    },
    "thor": {"2-0040": ["VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0"], "2-0044": ["VIN"]},
}
EXPECTED_TOTAL = {
    "nano": "POM_5V_IN",
    "tx2": "VDD_IN",
    "xavier-nx": "VDD_IN",
    "agx-xavier": None,
    "orin-nano": "VDD_IN",
    "orin-nx": "VDD_IN",
    "agx-orin": None,
    "thor": "VIN",
}
EXPECTED_L4T = {
    "nano": "32.7.4",
    "tx2": "32.7.4",
    "xavier-nx": "32.7.4",
    "agx-xavier": "32.7.4",
    "orin-nano": "36.4.7",
    "orin-nx": "36.5.0",
    "agx-orin": "35.5.0",
    "thor": "38.4.0",
}
EXPECTED_MODES = {
    "nano": {0: "MAXN", 1: "5W"},
    "tx2": {
        0: "MAXN",
        1: "MAXQ",
        2: "MAXP_CORE_ALL",
        3: "MAXP_CORE_ARM",
        4: "MAXP_CORE_DENVER",
    },
    "agx-xavier": {
        0: "MAXN",
        1: "MODE_10W",
        2: "MODE_15W",
        3: "MODE_30W_ALL",
        4: "MODE_30W_6CORE",
        5: "MODE_30W_4CORE",
        6: "MODE_30W_2CORE",
        7: "MODE_15W_DESKTOP",
    },
    "orin-nano": {0: "15W", 1: "25W", 2: "MAXN_SUPER", 3: "7W"},
    "orin-nx": {0: "MAXN_SUPER", 1: "10W", 2: "15W", 3: "25W", 4: "40W"},
    "agx-orin": {0: "MAXN", 1: "MODE_15W", 2: "MODE_30W", 3: "MODE_50W"},
}


@pytest.fixture(scope="module")
def boards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("boards")
    return {name: create(name, base / name) for name in MODEL_NAMES}


def _i2c_channels(root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for dev in sorted((root / "sys/bus/i2c/devices").iterdir()):
        name = (dev / "name").read_text().strip()
        if name == "ina3221x":
            (iio,) = dev.glob("iio:device*")
            out[dev.name] = [(iio / f"rail_name_{i}").read_text().strip() for i in range(3)]
        elif name == "ina3221":
            (hw,) = (dev / "hwmon").iterdir()
            out[dev.name] = [(hw / f"in{i}_label").read_text().strip() for i in (1, 2, 3)]
        elif name == "ina238":
            out[dev.name] = ["VIN"]
    return out


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_rails_have_the_reference_names_and_total(boards: dict[str, Path], name: str) -> None:
    root = boards[name]
    assert _i2c_channels(root) == EXPECTED_CHANNELS[name]
    assert get_model(name).total_rail == EXPECTED_TOTAL[name]
    drivers = {p.parent.name for p in (root / "sys/bus/i2c/drivers").glob("*/*")}
    assert drivers <= {"ina3221", "ina3221x", "ina238"}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_identity_files(boards: dict[str, Path], name: str) -> None:
    root = boards[name]
    model = get_model(name)
    first = (root / "etc/nv_tegra_release").read_text().splitlines()[0]
    match = re.match(
        r"^# R(\d+) \(release\), REVISION: (\d+)\.(\d+), GCID: \d+, BOARD: \w+, "
        r"EABI: aarch64, DATE: .+ UTC \d{4}$",
        first,
    )
    assert match is not None, first
    assert ".".join(match.groups()) == EXPECTED_L4T[name]
    for base in ("proc/device-tree", "sys/firmware/devicetree/base"):
        raw_model = (root / base / "model").read_bytes()
        assert raw_model.endswith(b"\0") and raw_model.count(b"\0") == 1
        assert raw_model[:-1].decode() == model.dt_model
        compatible = (root / base / "compatible").read_bytes()
        assert compatible.endswith(b"\0")
        parts = compatible[:-1].split(b"\0")
        assert parts[-1] == model.soc.replace("tegra", "nvidia,tegra").encode()
    assert (root / "proc/sys/kernel/osrelease").read_text().strip().endswith("tegra")
    marker = json.loads((root / "etc/edgeenergy-virtual-board.json").read_text())
    assert marker == {"simulated": True, "model": name, "update_interval_ms": 5.0}


def test_orin_nano_identity_matches_the_real_board(boards: dict[str, Path]) -> None:
    root = boards["orin-nano"]
    sample = (SHARED / "reference/samples/nv_tegra_release_r36.txt").read_text().splitlines()
    assert (root / "etc/nv_tegra_release").read_text().splitlines() == sample[1:5]
    assert (root / "proc/device-tree/compatible").read_bytes() == (
        b"nvidia,p3767-0005\0nvidia,tegra234\0"
    )
    assert (root / "proc/device-tree/model").read_bytes() == (
        b"NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super\0"
    )


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_jtop_finds_exactly_the_rails_with_the_file_values(
    boards: dict[str, Path], name: str
) -> None:
    power = pytest.importorskip("jtop.core.power")
    root = boards[name]
    sensors = power.find_all_i2c_power_monitor(str(root / "sys/bus/i2c/devices"))
    expected = [c for chans in EXPECTED_CHANNELS[name].values() for c in chans if c != NC]
    assert sorted(sensors) == sorted(expected)
    by_name = {rf.name: rf for rf in rail_files(get_model(name))}
    for rail, paths in sensors.items():
        values = power.read_power_status(paths)
        rf = by_name[rail]
        assert values["volt"] == int((root / rf.voltage).read_text())
        assert values["curr"] == int((root / rf.current).read_text())
        if rf.power is not None:
            scale = 1 if rf.kind == "iio" else 1000  # iio mW; INA238 µW, jtop shows mW
            assert values["power"] == int((root / rf.power).read_text()) // scale
        assert values["volt"] > 0 and values["curr"] >= 0
    assert sum(power.read_power_status(p)["curr"] for p in sensors.values()) > 0


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_layout_is_relative_and_as_on_boards(boards: dict[str, Path], name: str) -> None:
    root = boards[name]
    model = get_model(name)
    for dirpath, dirnames, filenames in os.walk(root):
        for entry in dirnames + filenames:
            path = Path(dirpath) / entry
            if path.is_symlink():
                assert not os.path.isabs(os.readlink(path)), path
                assert path.resolve().is_relative_to(root.resolve()), path
                assert path.exists(), f"dangling link {path}"
    for chip in model.chips:
        dev = root / "sys/bus/i2c/devices" / chip.device
        assert dev.is_symlink() and (root / chip.device_dir).is_dir()
        assert (root / "sys/bus/i2c/drivers" / chip.driver / chip.device).is_symlink()
        if chip.layout == "hwmon":
            assert [p.name for p in (dev / "hwmon").iterdir()] == [f"hwmon{chip.index}"]
    cpu_dir = root / "sys/devices/system/cpu"
    assert not (cpu_dir / "cpu0/online").exists()
    for cpu in range(1, model.cpu_count):
        assert (cpu_dir / f"cpu{cpu}/online").read_text() in ("0\n", "1\n")
    policy = cpu_dir / "cpu0/cpufreq"
    table = [int(v) for v in (policy / "scaling_available_frequencies").read_text().split()]
    assert table == list(model.clusters[0].freqs_khz)
    gpu = root / model.gpu.devfreq_dir
    assert [int(v) for v in (gpu / "available_frequencies").read_text().split()] == list(
        model.gpu.freqs_hz
    )
    assert (root / model.gpu.conf_devfreq.lstrip("/") / "max_freq").is_file()
    assert (root / "usr/bin/nvpmodel").stat().st_mode & 0o111
    meminfo = (root / "proc/meminfo").read_text()
    assert re.search(rf"^MemTotal:\s+{model.ram_kb} kB$", meminfo, re.M)


def test_frequency_tables_are_the_real_ones() -> None:
    nano = get_model("nano")
    assert len(nano.clusters[0].freqs_khz) == 15
    assert nano.clusters[0].freqs_khz[0] == 102000 and nano.clusters[0].freqs_khz[-1] == 1479000
    assert len(nano.gpu.freqs_hz) == 12
    assert (nano.gpu.freqs_hz[0], nano.gpu.freqs_hz[-1]) == (76800000, 921600000)
    xnx = get_model("xavier-nx")
    assert len(xnx.clusters[0].freqs_khz) == 25 and xnx.clusters[0].freqs_khz[-1] == 1907200
    assert len(xnx.gpu.freqs_hz) == 15 and xnx.gpu.freqs_hz[-1] == 1109250000
    onx = get_model("orin-nx")
    assert len(onx.clusters[0].freqs_khz) == 26 and onx.clusters[0].freqs_khz[-1] == 1984000
    assert onx.gpu.freqs_hz[:7] == tuple(range(306000000, 918000001, 102000000))
    assert get_model("orin-nano").gpu.freqs_hz[-1] == 1020000000
    assert get_model("agx-orin").clusters[0].freqs_khz[-1] == 2201600
    assert get_model("agx-orin").gpu.freqs_hz[-1] == 1300500000
    assert get_model("agx-xavier").clusters[0].freqs_khz[-1] == 2265600
    assert get_model("agx-xavier").gpu.freqs_hz[-1] == 1377000000
    assert get_model("tx2").gpu.freqs_hz[-1] == 1300500000
    assert get_model("thor").cpu_count == 14


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_nvpmodel_conf_parses_and_points_into_the_tree(boards: dict[str, Path], name: str) -> None:
    root = boards[name]
    conf = parse_conf((root / "etc/nvpmodel.conf").read_text())
    model = get_model(name)
    assert conf.default_id == model.default_mode
    if name in EXPECTED_MODES:
        assert {m.id: m.name for m in conf.modes} == EXPECTED_MODES[name]
    for param in conf.params.values():
        for arg, board_path in param.args.items():
            if board_path.endswith("/cpu0/online"):
                continue  # real confs list CORE_0 although cpu0 has no online file
            assert (root / board_path.lstrip("/")).exists(), f"{param.name} {arg} {board_path}"
    status = (root / "var/lib/nvpmodel/status").read_text()
    assert status == f"pmode:{model.default_mode:04d} fmode:fanNull\n"


def test_orin_nano_modes_match_the_shipped_conf_sample() -> None:
    sample = SHARED / "reference/samples/nvpmodel-conf_orin-nano-super_abbreviated.txt"
    shipped = parse_conf(sample.read_text())
    ours = parse_conf(create_text("orin-nano"))
    for mode in shipped.modes:
        mine = ours.mode(mode.id)
        assert mine.name == mode.name
        for setting in mode.settings:
            got = mine.get(setting.param, setting.arg)
            assert got is not None and got.value == setting.value, setting
    assert ours.default_id == shipped.default_id


def create_text(name: str) -> str:
    from pytest_edgeenergy.sim.nvpconf import conf_text

    return conf_text(get_model(name))


def test_unknown_model_lists_the_names(tmp_path: Path) -> None:
    with pytest.raises(UnknownBoardModel) as info:
        create("jetson-tk1", tmp_path / "x")
    message = str(info.value)
    assert "jetson-tk1" in message
    for name in MODEL_NAMES:
        assert name in message
    assert isinstance(info.value, ValueError)
    assert not (tmp_path / "x").exists()


def test_refuses_a_non_empty_directory_that_is_not_a_board(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(TreeNotEmpty, match="not a virtual board"):
        create("nano", tmp_path)
    assert (tmp_path / "precious.txt").read_text() == "keep me"
    assert not (tmp_path / "sys").exists()


def test_bad_update_interval_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="update_interval_ms"):
        create("nano", tmp_path / "b", update_interval_ms=0)


def test_recreating_a_board_replaces_it(tmp_path: Path) -> None:
    root = create("nano", tmp_path / "b")
    (root / "sys/extra").write_text("left over")
    create("orin-nano", root, update_interval_ms=20)
    assert not (root / "sys/extra").exists()
    marker = json.loads((root / "etc/edgeenergy-virtual-board.json").read_text())
    assert marker["model"] == "orin-nano" and marker["update_interval_ms"] == 20
    hwmon = root / "sys/bus/i2c/devices/1-0040/hwmon/hwmon1"
    assert (hwmon / "update_interval").read_text() == "20\n"


def test_live_files_change_in_place_for_an_open_reader(tmp_path: Path) -> None:
    root = create("orin-nano", tmp_path / "b")
    rf = rail_files(get_model("orin-nano"))[0]
    path = root / rf.current
    inode = path.stat().st_ino
    fd = os.open(path, os.O_RDONLY)
    try:
        before = os.pread(fd, 64, 0)
        assert len(before) == LIVE_WIDTH + 1 and before.endswith(b"\n")
        animator = Animator(root)
        try:
            animator.tick(load=1.0, noise=False)
        finally:
            animator.close()
        after = os.pread(fd, 64, 0)
    finally:
        os.close(fd)
    assert int(after) > int(before)
    assert path.stat().st_ino == inode
    assert after.split(b" ")[0].isdigit()  # jetson-stats reads text.split(" ")[0]


def test_write_knob_keeps_live_width_and_plain_format(tmp_path: Path) -> None:
    live = tmp_path / "rate"
    live.write_text("204000000".ljust(LIVE_WIDTH) + "\n")
    write_knob(live, "3199000000")
    assert live.read_text() == "3199000000".ljust(LIVE_WIDTH) + "\n"
    knob = tmp_path / "max_freq"
    knob.write_text("918000000\n")
    write_knob(knob, "306000000")
    assert knob.read_text() == "306000000\n"


def test_relocated_tree_still_works(tmp_path: Path) -> None:
    first = create("agx-orin", tmp_path / "a")
    copy = tmp_path / "copy"
    shutil.copytree(first, copy, symlinks=True)
    moved = tmp_path / "moved"
    shutil.move(str(first), moved)
    for root in (copy, moved):
        assert _i2c_channels(root) == EXPECTED_CHANNELS["agx-orin"]
        animator = Animator(root)
        try:
            animator.tick(load=0.5, noise=False)
        finally:
            animator.close()
        truth = read_truth(root)
        rf = rail_files(get_model("agx-orin"))[0]
        shown = int((root / rf.voltage).read_text()) * int((root / rf.current).read_text()) / 1e6
        assert truth.power_w[rf.name] == pytest.approx(shown, abs=1e-12)
