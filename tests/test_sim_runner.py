"""Animating virtual boards: clocks follow knobs, power follows clocks and load, the
ground-truth counter integrates what was written, and the simulator process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_edgeenergy.sim.models import get_model
from pytest_edgeenergy.sim.railfiles import rail_files
from pytest_edgeenergy.sim.runner import (
    LOAD_OVERRIDE,
    Animator,
    NotAVirtualBoard,
    SimAlreadyRunning,
    SimProcess,
    run,
)
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.sim.truth import (
    TRUTH_BIN,
    Truth,
    TruthUnavailable,
    TruthWriter,
    read_truth,
)

GPU_DEVFREQ = "sys/devices/platform/17000000.gpu/devfreq_dev"
CPU0 = "sys/devices/system/cpu/cpu0/cpufreq"


def _set(root: Path, rel: str, value: str | int) -> None:
    (root / rel).write_text(f"{value}\n")


def _read(root: Path, rel: str) -> int:
    return int((root / rel).read_text())


def _tick(root: Path, n: int = 3, *, load: float | None = None) -> Truth:
    animator = Animator(root, seed=1)
    try:
        for _ in range(n):
            animator.tick(load=load)
    finally:
        animator.close()
    return read_truth(root)


@pytest.fixture
def orin_nano(tmp_path: Path) -> Path:
    root = create("orin-nano", tmp_path / "b")
    _set(root, LOAD_OVERRIDE, "0.8")
    return root


# ------------------------------------------------------------------ ground truth


def test_truth_integrates_constant_power_exactly(tmp_path: Path) -> None:
    writer = TruthWriter(tmp_path, ["A", "B"], None)
    writer.update(10.0, [2.0, 3.0])
    writer.update(12.5, [2.0, 3.0])
    writer.close()
    truth = read_truth(tmp_path)
    assert truth.t_s == 12.5
    assert truth.energy_j == {"A": pytest.approx(5.0), "B": pytest.approx(7.5)}
    assert truth.total_energy_j == pytest.approx(12.5)
    assert truth.energy_j_at(13.5) == {"A": pytest.approx(7.0), "B": pytest.approx(10.5)}
    assert truth.total_energy_j_at(13.5) == pytest.approx(17.5)
    assert truth.total_method == "sum"


def test_truth_is_piecewise_constant_and_total_follows_the_total_rail(tmp_path: Path) -> None:
    writer = TruthWriter(tmp_path, ["IN", "CPU"], "IN")
    writer.update(0.0, [5.0, 1.0])
    writer.update(1.0, [7.0, 2.0])  # 5 W and 1 W were shown during [0, 1]
    writer.update(3.0, [7.0, 2.0])
    writer.close()
    truth = read_truth(tmp_path)
    assert truth.energy_j["IN"] == pytest.approx(5.0 + 14.0)
    assert truth.energy_j["CPU"] == pytest.approx(1.0 + 4.0)
    assert truth.total_energy_j == pytest.approx(truth.energy_j["IN"])
    assert truth.total_power_w == 7.0 and truth.total_rail == "IN"
    assert truth.seq == 3


def test_truth_continues_across_writers(tmp_path: Path) -> None:
    now = time.monotonic()
    first = TruthWriter(tmp_path, ["A"], None)
    first.update(now - 2.0, [1.5])
    first.close()
    second = TruthWriter(tmp_path, ["A"], None)
    second.update(now, [4.0])
    second.close()
    truth = read_truth(tmp_path)
    assert truth.energy_j["A"] == pytest.approx(3.0)
    assert truth.seq == 2


def test_torn_or_missing_truth_is_reported(tmp_path: Path) -> None:
    with pytest.raises(TruthUnavailable):
        read_truth(tmp_path)
    writer = TruthWriter(tmp_path, ["A"], None)
    writer.update(1.0, [1.0])
    writer.close()
    path = tmp_path / TRUTH_BIN
    data = bytearray(path.read_bytes())
    data[30] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(TruthUnavailable, match="no valid"):
        read_truth(tmp_path, attempts=3)


def test_concurrent_reads_always_get_whole_records(tmp_path: Path) -> None:
    writer = TruthWriter(tmp_path, [f"R{i}" for i in range(6)], None)
    writer.update(0.0, [1.0] * 6)
    done = threading.Event()

    def write() -> None:
        t = 0.0
        while not done.is_set():
            t += 0.001
            writer.update(t, [1.0] * 6)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        seqs = []
        for _ in range(300):
            truth = read_truth(tmp_path)
            # A whole record: energy equals power x time for every rail.
            for energy in truth.energy_j.values():
                assert energy == pytest.approx(truth.t_s, rel=1e-9, abs=1e-9)
            seqs.append(truth.seq)
    finally:
        done.set()
        thread.join()
        writer.close()
    assert seqs == sorted(seqs)


# ------------------------------------------------------------------ clocks and power


def test_power_rises_with_gpu_frequency(orin_nano: Path) -> None:
    root = orin_nano
    _set(root, f"{GPU_DEVFREQ}/min_freq", 306000000)
    _set(root, f"{GPU_DEVFREQ}/max_freq", 306000000)
    run(root, duration_s=0.05)
    low = read_truth(root)
    assert _read(root, f"{GPU_DEVFREQ}/cur_freq") == 306000000
    _set(root, f"{GPU_DEVFREQ}/max_freq", 1020000000)
    _set(root, f"{GPU_DEVFREQ}/min_freq", 1020000000)
    run(root, duration_s=0.05)
    high = read_truth(root)
    assert _read(root, f"{GPU_DEVFREQ}/cur_freq") == 1020000000
    assert high.power_w["VDD_CPU_GPU_CV"] > low.power_w["VDD_CPU_GPU_CV"] + 3.0
    assert high.total_power_w > low.total_power_w + 3.0


def test_power_rises_with_load(orin_nano: Path) -> None:
    _set(orin_nano, LOAD_OVERRIDE, "0.0")
    idle = _tick(orin_nano)
    _set(orin_nano, LOAD_OVERRIDE, "1.0")
    busy = _tick(orin_nano)
    assert busy.total_power_w > idle.total_power_w + 5.0
    # load-following governors moved the clocks up
    assert _read(orin_nano, f"{GPU_DEVFREQ}/cur_freq") == _read(
        orin_nano, f"{GPU_DEVFREQ}/max_freq"
    )


def test_cpu_governors_drive_scaling_cur_freq(orin_nano: Path) -> None:
    root = orin_nano
    _set(root, f"{CPU0}/scaling_governor", "performance")
    _tick(root, 1)
    assert _read(root, f"{CPU0}/scaling_cur_freq") == _read(root, f"{CPU0}/scaling_max_freq")
    assert _read(root, f"{CPU0}/cpuinfo_cur_freq") == _read(root, f"{CPU0}/scaling_max_freq")
    _set(root, f"{CPU0}/scaling_governor", "powersave")
    _tick(root, 1)
    assert _read(root, f"{CPU0}/scaling_cur_freq") == 729600
    _set(root, f"{CPU0}/scaling_governor", "userspace")
    _set(root, f"{CPU0}/scaling_setspeed", 1000000)  # between steps: next step up
    _tick(root, 1)
    assert _read(root, f"{CPU0}/scaling_cur_freq") == 1036800
    _set(root, f"{GPU_DEVFREQ}/governor", "userspace")
    _set(root, f"{GPU_DEVFREQ}/userspace/set_freq", 612000000)
    _tick(root, 1)
    assert _read(root, f"{GPU_DEVFREQ}/cur_freq") == 612000000


def test_offline_cores_show_in_the_online_list_and_power(orin_nano: Path) -> None:
    root = orin_nano
    before = _tick(root)
    for cpu in (2, 3, 4, 5):
        _set(root, f"sys/devices/system/cpu/cpu{cpu}/online", 0)
    after = _tick(root)
    assert (root / "sys/devices/system/cpu/online").read_text().strip() == "0-1"
    assert after.power_w["VDD_CPU_GPU_CV"] < before.power_w["VDD_CPU_GPU_CV"]


def test_emc_follows_cap_and_lock(orin_nano: Path) -> None:
    root = orin_nano
    emc = "sys/kernel/debug/bpmp/debug/clk/emc"
    _set(root, LOAD_OVERRIDE, "1.0")
    _set(root, "sys/kernel/nvpmodel_clk_cap/emc", 2133000000)
    _tick(root, 1)
    assert _read(root, f"{emc}/rate") == 2133000000
    _set(root, "sys/kernel/nvpmodel_clk_cap/emc", 0)
    _set(root, LOAD_OVERRIDE, "0.0")
    _set(root, f"{emc}/rate", 665600000)
    _set(root, f"{emc}/mrq_rate_locked", 1)
    _tick(root, 2)
    assert _read(root, f"{emc}/rate") == 665600000


def test_tpc_gating_lowers_gpu_power(orin_nano: Path) -> None:
    root = orin_nano
    gpu0 = "sys/devices/platform/gpu.0"
    _set(root, f"{GPU_DEVFREQ}/governor", "performance")
    full = _tick(root, load=1.0)
    _set(root, f"{gpu0}/tpc_pg_mask", 252)  # 2 of 4 TPCs gated
    gated = _tick(root, load=1.0)
    assert gated.power_w["VDD_CPU_GPU_CV"] < full.power_w["VDD_CPU_GPU_CV"] - 1.0


@pytest.mark.parametrize("name", ["nano", "agx-orin", "thor"])
def test_truth_matches_the_files_and_integrates_a_run(tmp_path: Path, name: str) -> None:
    root = create(name, tmp_path / "b")
    model = get_model(name)
    _set(root, LOAD_OVERRIDE, "0.5")
    for cluster in model.clusters:
        _set(root, f"sys/devices/system/cpu/cpu{cluster.policy}/cpufreq/scaling_governor",
             "performance")  # fmt: skip
    _set(root, f"{model.gpu.devfreq_dir}/governor", "performance")
    # One short run first: the truth then already shows the pinned power, which it keeps
    # integrating until the next run's first tick (late on a busy host).
    run(root, duration_s=0.05)
    start = read_truth(root)
    t0 = time.monotonic()
    run(root, duration_s=0.2)
    t1 = time.monotonic()
    end = read_truth(root)
    assert end.seq > start.seq + 2
    for rf in rail_files(model):
        v = _read(root, rf.voltage)
        i = _read(root, rf.current)
        if rf.power is None:
            shown = v * i / 1e6
        elif rf.kind == "iio":
            shown = _read(root, rf.power) / 1e3
        else:
            shown = _read(root, rf.power) / 1e6
        assert end.power_w[rf.name] == pytest.approx(shown, abs=1e-12)
    if model.total_rail is None:
        assert end.total_power_w == pytest.approx(sum(end.power_w.values()))
    # Clocks are pinned and the load fixed: power only carries the ±1 % noise.
    energy = end.total_energy_j_at(t1) - start.total_energy_j_at(t0)
    assert energy == pytest.approx(end.total_power_w * (t1 - t0), rel=0.05)


def test_host_load_counts_this_process(tmp_path: Path) -> None:
    from pytest_edgeenergy.sim.hostload import HostLoad

    host = HostLoad(window_jiffies=1)
    w0, c0 = time.monotonic(), time.process_time()
    x = 0
    while time.process_time() - c0 < 0.3:
        x += 1
    busy = host.sample()
    own = (time.process_time() - c0) / (time.monotonic() - w0)
    host.close()
    assert busy + 0.1 >= own
    root = create("nano", tmp_path / "b")
    animator = Animator(root)
    try:
        animator.tick()
        animator.tick()
    finally:
        animator.close()
    assert 0.0 <= animator.last_load <= 1.0


def test_one_animator_per_tree(orin_nano: Path) -> None:
    first = Animator(orin_nano)
    try:
        with pytest.raises(SimAlreadyRunning):
            Animator(orin_nano)
    finally:
        first.close()
    Animator(orin_nano).close()


def test_run_refuses_a_directory_that_is_not_a_board(tmp_path: Path) -> None:
    with pytest.raises(NotAVirtualBoard, match="not a virtual board"):
        run(tmp_path, duration_s=0.01)
    with pytest.raises(ValueError, match="duration_s"):
        run(tmp_path, duration_s=-1)


def test_run_stops_on_event(orin_nano: Path) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=run, args=(orin_nano,), kwargs={"stop": stop})
    thread.start()
    deadline = time.monotonic() + 10
    seq = read_truth(orin_nano).seq
    while read_truth(orin_nano).seq < seq + 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert read_truth(orin_nano).seq >= seq + 3


# ------------------------------------------------------------------ the process


def test_sim_process_starts_ticks_and_stops(orin_nano: Path) -> None:
    with SimProcess(orin_nano) as sim:
        pid = sim.pid
        assert pid is not None and sim.running
        first = read_truth(orin_nano).seq
        deadline = time.monotonic() + 10
        while read_truth(orin_nano).seq <= first and time.monotonic() < deadline:
            time.sleep(0.01)
        assert read_truth(orin_nano).seq > first
    assert not sim.running
    assert sim.process is not None and sim.process.returncode == 0  # clean SIGTERM exit
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    Animator(orin_nano).close()  # the lock was released


def test_sim_process_refuses_a_non_board(tmp_path: Path) -> None:
    with pytest.raises(NotAVirtualBoard), SimProcess(tmp_path):
        pass


def test_module_cli_creates_and_runs(tmp_path: Path) -> None:
    root = tmp_path / "cli"
    created = subprocess.run(
        [sys.executable, "-m", "pytest_edgeenergy.sim", "create", "xavier-nx", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    seq = read_truth(root).seq
    ran = subprocess.run(
        [sys.executable, "-m", "pytest_edgeenergy.sim", "run", str(root), "--seconds", "0.1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert read_truth(root).seq > seq
    bad = subprocess.run(
        [sys.executable, "-m", "pytest_edgeenergy.sim", "create", "tk1", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "tk1" in bad.stderr and "agx-orin" in bad.stderr
