"""Knob discovery (CPUs, cpufreq, GPU devfreq, EMC, thermal, memory) on real file trees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.board.knobs import (
    parse_meminfo,
    read_cpufreq,
    read_cpus,
    read_emc,
    read_gpu_devfreq,
    read_knobs,
    read_thermal_zones,
)
from pytest_edgeenergy.board.sysfs import CpuListError, format_cpu_list, parse_cpu_list

CPU = "sys/devices/system/cpu"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def link(link_path: Path, target: Path) -> None:
    link_path.parent.mkdir(parents=True, exist_ok=True)
    link_path.symlink_to(os.path.relpath(target, link_path.parent))


def policy(root: Path, number: int, cpus: list[int], freqs_khz: list[int], cur_khz: int) -> Path:
    pol = root / CPU / "cpufreq" / f"policy{number}"
    write(pol / "related_cpus", " ".join(map(str, cpus)) + "\n")
    write(pol / "affected_cpus", " ".join(map(str, cpus)) + "\n")
    write(pol / "scaling_available_frequencies", " ".join(map(str, freqs_khz)) + " \n")
    write(pol / "scaling_min_freq", f"{freqs_khz[0]}\n")
    write(pol / "scaling_max_freq", f"{freqs_khz[-1]}\n")
    write(pol / "scaling_cur_freq", f"{cur_khz}\n")
    write(pol / "cpuinfo_min_freq", f"{freqs_khz[0]}\n")
    write(pol / "cpuinfo_max_freq", f"{freqs_khz[-1]}\n")
    write(pol / "scaling_governor", "schedutil\n")
    write(pol / "scaling_available_governors", "userspace ondemand performance schedutil \n")
    for cpu in cpus:
        link(root / CPU / f"cpu{cpu}" / "cpufreq", pol)
    return pol


def orin_nano_cpus(root: Path) -> None:
    write(root / CPU / "present", "0-5\n")
    write(root / CPU / "online", "0-3,5\n")
    for cpu in range(6):
        (root / CPU / f"cpu{cpu}").mkdir(parents=True, exist_ok=True)
        if cpu > 0:
            write(root / CPU / f"cpu{cpu}" / "online", "0\n" if cpu == 4 else "1\n")
    freqs = [115200, 729600, 1497600]
    policy(root, 0, [0, 1, 2, 3], freqs, 729600)
    policy(root, 4, [4, 5], freqs, 1497600)


def test_cpus_and_policies(tmp_path: Path) -> None:
    orin_nano_cpus(tmp_path)
    notes: list[str] = []
    cpus = read_cpus(tmp_path, notes)
    assert cpus.present == (0, 1, 2, 3, 4, 5)
    assert cpus.online == (0, 1, 2, 3, 5)
    assert [c.online for c in cpus.cores] == [True, True, True, True, False, True]
    assert cpus.cores[0].online_path is None
    assert cpus.cores[1].online_path == f"{CPU}/cpu1/online"
    assert notes == []

    policies = read_cpufreq(tmp_path)
    assert [p.name for p in policies] == ["policy0", "policy4"]
    assert [p.cpus for p in policies] == [(0, 1, 2, 3), (4, 5)]
    first = policies[0]
    assert first.available_freqs_hz == (115_200_000, 729_600_000, 1_497_600_000)
    assert (first.min_freq_hz, first.max_freq_hz, first.cur_freq_hz) == (
        115_200_000,
        1_497_600_000,
        729_600_000,
    )
    assert (first.hw_min_freq_hz, first.hw_max_freq_hz) == (115_200_000, 1_497_600_000)
    assert first.governor == "schedutil"
    assert "performance" in first.available_governors
    assert first.path == f"{CPU}/cpufreq/policy0"


def test_per_cpu_cpufreq_without_policy_dirs(tmp_path: Path) -> None:
    # Old kernels / hand-made trees: real per-CPU dirs, one clock for all 4 cores.
    for cpu in range(4):
        d = tmp_path / CPU / f"cpu{cpu}" / "cpufreq"
        write(d / "related_cpus", "0 1 2 3\n")
        write(d / "scaling_cur_freq", "1479000\n")
        write(d / "scaling_available_frequencies", "102000 1479000\n")
    policies = read_cpufreq(tmp_path)
    assert len(policies) == 1
    assert policies[0].name == "cpu0" and policies[0].cpus == (0, 1, 2, 3)
    assert policies[0].cur_freq_hz == 1_479_000_000
    assert policies[0].governor is None and policies[0].min_freq_hz is None


def test_bad_online_list_becomes_a_note(tmp_path: Path) -> None:
    write(tmp_path / CPU / "online", "0-x\n")
    write(tmp_path / CPU / "present", "0-1\n")
    write(tmp_path / CPU / "cpu1/online", "1\n")
    (tmp_path / CPU / "cpu0").mkdir()
    notes: list[str] = []
    cpus = read_cpus(tmp_path, notes)
    assert len(notes) == 1 and "online" in notes[0] and "0-x" in notes[0]
    # cpu0 has no online file and the list is unusable: unknown.
    assert [c.online for c in cpus.cores] == [None, True]
    assert cpus.online == (1,)


def gpu_devfreq(root: Path, device_dir: str, name: str, of_node: str | None) -> Path:
    dev = root / device_dir
    devfreq = dev / "devfreq" / name
    write(devfreq / "available_frequencies", "306000000 408000000 624750000 1020000000\n")
    write(devfreq / "min_freq", "306000000\n")
    write(devfreq / "max_freq", "1020000000\n")
    write(devfreq / "cur_freq", "408000000\n")
    write(devfreq / "governor", "nvhost_podgov\n")
    write(devfreq / "available_governors", "nvhost_podgov performance userspace\n")
    if of_node is not None:
        write(dev / "of_node" / "name", of_node + "\0")
        link(devfreq / "device", dev)
    link(root / "sys/class/devfreq" / name, devfreq)
    return devfreq


def test_gpu_devfreq_via_class_and_of_node(tmp_path: Path) -> None:
    gpu_devfreq(tmp_path, "sys/devices/platform/bus@0/17000000.gpu", "17000000.gpu", "gpu")
    # Another devfreq device that is not the GPU.
    other = tmp_path / "sys/devices/platform/bus@0/15340000.vic/devfreq/15340000.vic"
    write(other / "cur_freq", "1\n")
    write(other.parent.parent / "of_node/name", "vic\0")
    link(other / "device", other.parent.parent)
    link(tmp_path / "sys/class/devfreq/15340000.vic", other)
    gpus = read_gpu_devfreq(tmp_path)
    assert len(gpus) == 1
    gpu = gpus[0]
    assert gpu.name == "17000000.gpu"
    assert gpu.path == "sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu"
    assert gpu.of_node_name == "gpu"
    assert gpu.available_freqs_hz == (306_000_000, 408_000_000, 624_750_000, 1_020_000_000)
    assert (gpu.min_freq_hz, gpu.max_freq_hz, gpu.cur_freq_hz) == (
        306_000_000,
        1_020_000_000,
        408_000_000,
    )
    assert gpu.governor == "nvhost_podgov"
    assert gpu.available_governors == ("nvhost_podgov", "performance", "userspace")


@pytest.mark.parametrize("node", ["gv11b", "gp10b", "ga10b", "gb10b", "nvgpu-x"])
def test_gpu_of_node_names(tmp_path: Path, node: str) -> None:
    gpu_devfreq(tmp_path, f"sys/devices/17000000.{node}", f"17000000.{node}", node)
    assert [g.of_node_name for g in read_gpu_devfreq(tmp_path)] == [node]


def test_thor_gpu_gpc_devfreq(tmp_path: Path) -> None:
    gpu_devfreq(tmp_path, "sys/devices/platform/gpu-gpc-0", "gpu-gpc-0", None)
    gpu_devfreq(tmp_path, "sys/devices/platform/gpu-nvd-0", "gpu-nvd-0", None)
    gpus = read_gpu_devfreq(tmp_path)
    assert [g.name for g in gpus] == ["gpu-gpc-0"]


def test_gpu_devfreq_fallback_scan(tmp_path: Path) -> None:
    d = tmp_path / "sys/devices/57000000.gpu/devfreq/57000000.gpu"
    write(d / "cur_freq", "76800000\n")
    write(d / "available_frequencies", "76800000 921600000\n")
    gpus = read_gpu_devfreq(tmp_path)
    assert [g.path for g in gpus] == ["sys/devices/57000000.gpu/devfreq/57000000.gpu"]
    assert gpus[0].cur_freq_hz == 76_800_000 and gpus[0].of_node_name is None


def test_gpu_devfreq_dev_fallback(tmp_path: Path) -> None:
    d = tmp_path / "sys/devices/platform/17000000.gpu/devfreq_dev"
    write(d / "max_freq", "1173000000\n")
    gpus = read_gpu_devfreq(tmp_path)
    assert [(g.name, g.path, g.max_freq_hz) for g in gpus] == [
        ("17000000.gpu", "sys/devices/platform/17000000.gpu/devfreq_dev", 1_173_000_000)
    ]


def test_emc_bpmp_with_cap(tmp_path: Path) -> None:
    emc_dir = tmp_path / "sys/kernel/debug/bpmp/debug/clk/emc"
    write(emc_dir / "rate", "2133000000\n")
    write(emc_dir / "min_rate", "204000000\n")
    write(emc_dir / "max_rate", "3199000000\n")
    write(emc_dir / "mrq_rate_locked", "0\n")
    write(tmp_path / "sys/kernel/nvpmodel_clk_cap/emc", "3199000000\n")
    emc = read_emc(tmp_path)
    assert emc is not None
    assert emc.interface == "bpmp"
    assert (emc.rate_hz, emc.min_rate_hz, emc.max_rate_hz) == (
        2_133_000_000,
        204_000_000,
        3_199_000_000,
    )
    assert emc.locked is False
    assert (emc.cap_hz, emc.cap_path) == (3_199_000_000, "sys/kernel/nvpmodel_clk_cap/emc")


def test_emc_t210(tmp_path: Path) -> None:
    write(tmp_path / "sys/kernel/debug/clk/override.emc/clk_rate", "1600000000\n")
    write(tmp_path / "sys/kernel/debug/clk/override.emc/clk_state", "1\n")
    write(tmp_path / "sys/kernel/debug/tegra_bwmgr/emc_min_rate", "204000000\n")
    write(tmp_path / "sys/kernel/debug/tegra_bwmgr/emc_max_rate", "1600000000\n")
    write(tmp_path / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "0\n")
    emc = read_emc(tmp_path)
    assert emc is not None and emc.interface == "t210"
    assert (emc.rate_hz, emc.min_rate_hz, emc.max_rate_hz, emc.locked) == (
        1_600_000_000,
        204_000_000,
        1_600_000_000,
        True,
    )
    assert emc.cap_hz == 0 and emc.cap_path == "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"


def test_emc_cap_only_and_nothing(tmp_path: Path) -> None:
    assert read_emc(tmp_path) is None
    write(tmp_path / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "garbage\n")
    emc = read_emc(tmp_path)
    assert emc is not None and emc.interface is None and emc.cap_hz is None
    assert emc.cap_path == "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"


def test_thermal_zones_with_unreadable_and_garbage(tmp_path: Path) -> None:
    base = tmp_path / "sys/devices/virtual/thermal"
    write(base / "thermal_zone0/type", "cpu-thermal\n")
    write(base / "thermal_zone0/temp", "47875\n")
    write(base / "thermal_zone1/type", "gpu-thermal\n")
    (base / "thermal_zone1/temp").mkdir(parents=True)  # read fails with an OSError
    write(base / "thermal_zone2/type", "cv0-thermal\n")
    write(base / "thermal_zone2/temp", "-256000\n")
    write(base / "thermal_zone10/type", "tj-thermal\n")
    write(base / "thermal_zone10/temp", "n/a\n")
    (base / "cooling_device0").mkdir()
    zones = read_thermal_zones(tmp_path)
    assert [(z.zone, z.type, z.temp_c) for z in zones] == [
        ("thermal_zone0", "cpu-thermal", 47.875),
        ("thermal_zone1", "gpu-thermal", None),
        ("thermal_zone2", "cv0-thermal", None),
        ("thermal_zone10", "tj-thermal", None),
    ]


def test_meminfo() -> None:
    mem = parse_meminfo(
        "MemTotal:        7620000 kB\nMemFree: 1 kB\nMemAvailable:   5000 kB\nbad\n"
    )
    assert mem.mem_total_bytes == 7_620_000 * 1024
    assert mem.mem_available_bytes == 5000 * 1024
    assert parse_meminfo("").mem_total_bytes is None


def test_read_knobs_whole_tree_and_json(tmp_path: Path) -> None:
    orin_nano_cpus(tmp_path)
    gpu_devfreq(tmp_path, "sys/devices/platform/bus@0/17000000.gpu", "17000000.gpu", "gpu")
    write(tmp_path / "proc/meminfo", "MemTotal: 8 kB\nMemAvailable: 4 kB\n")
    knobs = read_knobs(tmp_path)
    assert knobs.gpu is not None and knobs.gpu.name == "17000000.gpu"
    assert knobs.emc is None and knobs.thermal_zones == ()
    assert knobs.memory is not None and knobs.memory.mem_total_bytes == 8192
    data = json.loads(json.dumps(knobs.to_json()))
    assert data["cpu"]["online"] == [0, 1, 2, 3, 5]
    assert data["cpufreq"][1]["cpus"] == [4, 5]
    assert data["gpu"]["available_freqs_hz"][0] == 306_000_000
    assert data["emc"] is None
    assert data["notes"] == []


def test_read_knobs_empty_root(tmp_path: Path) -> None:
    knobs = read_knobs(tmp_path)
    assert knobs.cpu.present == () and knobs.cpufreq == () and knobs.gpus == ()
    assert knobs.memory is None
    assert knobs.notes == ("no GPU devfreq device found",)
    assert json.dumps(knobs.to_json())


# ------------------------------------------------------------------ CPU lists


@given(st.sets(st.integers(0, 300), max_size=40))
def test_cpu_list_round_trip(cpus: set[int]) -> None:
    text = format_cpu_list(sorted(cpus))
    assert parse_cpu_list(text) == tuple(sorted(cpus))
    assert parse_cpu_list(text + "\n") == tuple(sorted(cpus))


@given(st.lists(st.tuples(st.integers(0, 64), st.integers(0, 8)), min_size=1, max_size=8))
def test_cpu_list_ranges_cover_every_cpu(ranges: list[tuple[int, int]]) -> None:
    text = ",".join(f"{a}-{a + n}" if n else str(a) for a, n in ranges)
    expected = sorted({c for a, n in ranges for c in range(a, a + n + 1)})
    assert parse_cpu_list(text) == tuple(expected)


@pytest.mark.parametrize("bad", ["0-", "a", "1,,2", "3-1", "0-5x", "-1"])
def test_cpu_list_rejects_garbage(bad: str) -> None:
    with pytest.raises(CpuListError) as info:
        parse_cpu_list(bad)
    assert repr(bad) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_cpu_list_examples() -> None:
    assert parse_cpu_list("0,3-5") == (0, 3, 4, 5)
    assert parse_cpu_list("0-5") == (0, 1, 2, 3, 4, 5)
    assert parse_cpu_list("") == ()
    assert format_cpu_list([5, 0, 3, 4]) == "0,3-5"


# ------------------------------------------------------------------ absolute files


def test_knob_values_hold_their_absolute_files(tmp_path: Path) -> None:
    """Discovery gives each knob's files once: root + relative path, joined in one place."""
    orin_nano_cpus(tmp_path)
    dev = "sys/devices/platform/bus@0/17000000.gpu"
    devfreq = gpu_devfreq(tmp_path, dev, "17000000.gpu", "gpu")
    write(tmp_path / dev / "railgate_enable", "1\n")
    emc_dir = tmp_path / "sys/kernel/debug/bpmp/debug/clk/emc"
    write(emc_dir / "rate", "2133000000\n")
    write(emc_dir / "mrq_rate_locked", "0\n")
    write(tmp_path / "sys/kernel/nvpmodel_clk_cap/emc", "0\n")
    knobs = read_knobs(tmp_path)
    cores = knobs.cpu.cores
    assert cores[0].online_file is None
    assert cores[1].online_file == tmp_path / CPU / "cpu1/online"
    pol = knobs.cpufreq[0]
    assert pol.min_file == tmp_path / CPU / "cpufreq/policy0/scaling_min_freq"
    assert pol.governor_file.read_text() == "schedutil\n"
    gpu = knobs.gpu
    assert gpu is not None and gpu.max_file == devfreq / "max_freq"
    assert gpu.railgate_path == f"{gpu.path}/device/railgate_enable"
    assert gpu.railgate_file is not None
    assert gpu.railgate_file.resolve() == (tmp_path / dev / "railgate_enable").resolve()
    emc = knobs.emc
    assert emc is not None and emc.can_pin
    assert (emc.lock_file, emc.set_file, emc.read_file) == (
        emc_dir / "mrq_rate_locked",
        emc_dir / "rate",
        emc_dir / "rate",
    )
    assert emc.cap_file == tmp_path / "sys/kernel/nvpmodel_clk_cap/emc"
    # The JSON document is unchanged: relative paths only, no root, no control-only fields.
    data = json.loads(json.dumps(knobs.to_json()))
    assert sorted(data["gpu"]) == [
        "available_freqs_hz",
        "available_governors",
        "cur_freq_hz",
        "governor",
        "max_freq_hz",
        "min_freq_hz",
        "name",
        "of_node_name",
        "path",
    ]
    assert sorted(data["emc"]) == [
        "cap_hz",
        "cap_path",
        "interface",
        "locked",
        "max_rate_hz",
        "min_rate_hz",
        "path",
        "rate_hz",
    ]
    assert sorted(data["cpu"]["cores"][1]) == ["cpu", "online", "online_path"]


def test_emc_can_pin_only_with_lock_and_rate_request(tmp_path: Path) -> None:
    override = tmp_path / "sys/kernel/debug/clk/override.emc"
    write(override / "clk_rate", "1600000000\n")
    write(override / "clk_state", "0\n")
    emc = read_emc(tmp_path)
    assert emc is not None and emc.interface == "t210" and not emc.can_pin
    write(override / "clk_update_rate", "1600000000\n")
    emc = read_emc(tmp_path)
    assert emc is not None and emc.can_pin
    assert (emc.lock_file, emc.set_file, emc.read_file) == (
        override / "clk_state",
        override / "clk_update_rate",
        override / "clk_rate",
    )
    cap_only = tmp_path / "cap"
    write(cap_only / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "0\n")
    bare = read_emc(cap_only)
    assert bare is not None and not bare.can_pin
    with pytest.raises(ValueError, match="no clock override interface"):
        bare.lock_file  # noqa: B018
