"""Knobs, guard, apply order, session restore, drift, privileges and residency on a small
hand-made board tree (no nvpmodel tool): the control layer against real files."""

from __future__ import annotations

import hashlib
import io
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.control.errors import (
    NotOffered,
    PrivilegeError,
    UnknownKnobFile,
    ValueSpecError,
)
from pytest_edgeenergy.control.knobs import (
    CpufreqKnob,
    CpuTarget,
    GpuKnob,
    GpuTarget,
    min_max_writes,
)
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.operating_point import (
    DVFS,
    OperatingPoint,
    apply,
    check_drift,
    files_for,
    read_back,
    resolve,
    thermal_trips,
)
from pytest_edgeenergy.control.privileges import check_privileges
from pytest_edgeenergy.control.residency import ResidencySampler, residency_to_json
from pytest_edgeenergy.control.state import STATE_IN_ROOT, Session, load_state, restore_leftover
from pytest_edgeenergy.control.steps import Write

CPU_KHZ = (729600, 1036800, 1497600)
GPU_HZ = (306000000, 612000000, 1020000000)


def _w(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_board(root: Path) -> Path:
    """A 4-core, 2-policy board with a GPU devfreq, bpmp EMC and one thermal zone."""
    cpu = "sys/devices/system/cpu"
    _w(root, f"{cpu}/present", "0-3\n")
    _w(root, f"{cpu}/online", "0-3\n")
    for n in range(4):
        _w(root, f"{cpu}/cpu{n}/topology/core_id", f"{n}\n")
        if n:
            _w(root, f"{cpu}/cpu{n}/online", "1\n")
    for first in (0, 2):
        pol = f"{cpu}/cpufreq/policy{first}"
        _w(root, f"{pol}/related_cpus", f"{first} {first + 1}\n")
        _w(root, f"{pol}/scaling_available_frequencies", " ".join(map(str, CPU_KHZ)) + "\n")
        _w(root, f"{pol}/scaling_min_freq", "729600\n")
        _w(root, f"{pol}/scaling_max_freq", "1497600\n")
        _w(root, f"{pol}/scaling_cur_freq", "1036800\n")
        _w(root, f"{pol}/cpuinfo_min_freq", "729600\n")
        _w(root, f"{pol}/cpuinfo_max_freq", "1497600\n")
        _w(root, f"{pol}/scaling_governor", "schedutil\n")
        _w(root, f"{pol}/scaling_available_governors", "schedutil performance powersave\n")
    gpu = "sys/devices/platform/17000000.gpu"
    _w(root, f"{gpu}/of_node/name", "gpu\n")
    dev = f"{gpu}/devfreq_dev"
    _w(root, f"{dev}/available_frequencies", " ".join(map(str, GPU_HZ)) + "\n")
    _w(root, f"{dev}/min_freq", "306000000\n")
    _w(root, f"{dev}/max_freq", "1020000000\n")
    _w(root, f"{dev}/cur_freq", "306000000\n")
    _w(root, f"{dev}/governor", "nvhost_podgov\n")
    _w(root, f"{dev}/available_governors", "nvhost_podgov performance userspace\n")
    os.symlink("..", root / dev / "device")
    (root / "sys/class/devfreq").mkdir(parents=True)
    os.symlink("../../devices/platform/17000000.gpu/devfreq_dev", root / "sys/class/devfreq/gpu")
    _w(root, "sys/devices/platform/gpu.0/railgate_enable", "1\n")
    emc = "sys/kernel/debug/bpmp/debug/clk/emc"
    _w(root, f"{emc}/rate", "2133000000\n")
    _w(root, f"{emc}/min_rate", "204000000\n")
    _w(root, f"{emc}/max_rate", "3199000000\n")
    _w(root, f"{emc}/mrq_rate_locked", "0\n")
    _w(root, "sys/kernel/nvpmodel_clk_cap/emc", "0\n")
    zone = "sys/devices/virtual/thermal/thermal_zone0"
    _w(root, f"{zone}/type", "gpu-thermal\n")
    _w(root, f"{zone}/temp", "45000\n")
    _w(root, f"{zone}/trip_point_0_temp", "40000\n")
    _w(root, f"{zone}/trip_point_0_type", "active\n")
    _w(root, f"{zone}/trip_point_1_temp", "90000\n")
    _w(root, f"{zone}/trip_point_1_type", "passive\n")
    _w(root, "etc/hostname", "board\n")
    return root


def tree_hash(root: Path) -> str:
    """Hash of every file's path and bytes, the control layer's own state dir excluded."""
    digest = hashlib.sha256()
    state_dir = root / Path(STATE_IN_ROOT).parent
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == state_dir:
            continue
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink():
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return make_board(tmp_path / "board")


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text().strip()


POL0 = "sys/devices/system/cpu/cpufreq/policy0"
POL2 = "sys/devices/system/cpu/cpufreq/policy2"
GPU = "sys/devices/platform/17000000.gpu/devfreq_dev"
EMC = "sys/kernel/debug/bpmp/debug/clk/emc"


def test_knob_files_are_discovered_and_nothing_else_is_writable(board: Path) -> None:
    knobs = knobs_at(board)
    rels = {knobs.rel(p) for p in knobs.files}
    assert f"{POL0}/scaling_min_freq" in rels and f"{POL2}/scaling_governor" in rels
    assert f"{GPU}/max_freq" in rels and "sys/devices/platform/gpu.0/railgate_enable" in rels
    assert f"{EMC}/mrq_rate_locked" in rels and "sys/devices/system/cpu/cpu3/online" in rels
    assert f"{GPU}/cur_freq" not in rels and f"{POL0}/scaling_cur_freq" not in rels
    for outsider in (board / "etc/hostname", board / GPU / "cur_freq", board / "../x"):
        with pytest.raises(UnknownKnobFile, match="not one of the knob files"):
            knobs.check_writable(outsider)
    # An alias through the devfreq class symlink is the same file.
    knobs.check_writable(board / "sys/class/devfreq/gpu/max_freq")


def test_planned_writes_to_foreign_files_are_refused(board: Path) -> None:
    knob = GpuKnob(knobs_at(board))
    with pytest.raises(UnknownKnobFile):
        knob.apply([Write(board / "etc/hostname", "pwned", "board")])
    assert read(board, "etc/hostname") == "board"


def test_min_max_order_never_inverts(board: Path) -> None:
    lo, hi = board / GPU / "min_freq", board / GPU / "max_freq"
    hi.write_text("612000000\n")
    up = min_max_writes(lo, hi, "1020000000", "1020000000", "gpu")
    assert [w.path for w in up] == [hi, lo]  # raising the floor above the ceiling
    lo.write_text("612000000\n")
    down = min_max_writes(lo, hi, "306000000", "306000000", "gpu")
    assert [w.path for w in down] == [lo, hi]  # lowering: the floor first
    lo.write_text("306000000\n")
    hi.write_text("1020000000\n")
    only = min_max_writes(lo, hi, "306000000", "306000000", "gpu")
    assert [(w.path, w.old_value) for w in only] == [(hi, "1020000000")]  # min already right


def test_resolve_validates_every_value(board: Path) -> None:
    point = resolve(
        {"gpu_freq": "max", "cpu_freq": "1036800kHz", "cpu_cores": "2", "governor": "performance"},
        knobs_at(board),
    )
    assert point == OperatingPoint(None, 1036800000, 1020000000, None, 2, "performance")
    assert point.id == "gpu1.02GHz-cpu1.0368GHz-2cores-performance"
    assert resolve({}, knobs_at(board)) == DVFS and DVFS.id == "dvfs"
    assert resolve({"emc_freq": "max"}, knobs_at(board)).emc_freq_hz == 3199000000


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"gpu_freq": "700MHz"}, "--gpu-freq 700MHz: not offered; offered: 306, 612, 1020 MHz"),
        ({"cpu_freq": "2GHz"}, "--cpu-freq 2GHz: not offered"),
        ({"cpu_cores": "-2"}, "cannot be negative"),
        ({"cpu_cores": "5"}, "more cores than the board has (4 present"),
        ({"governor": "ondemand"}, "available: performance, powersave, schedutil"),
        ({"emc_freq": "5GHz"}, "offered: 204 .. 3199 MHz"),
        ({"emc_freq": "all"}, "no table of rates"),
        ({"gpu_freq": "612MHz,max"}, "one operating point takes one value"),
        ({"power_mode": "MAXN"}, "no nvpmodel.conf"),
    ],
)
def test_bad_input_is_refused_and_nothing_written(
    board: Path, spec: dict[str, str], needle: str
) -> None:
    before = tree_hash(board)
    with pytest.raises((ValueSpecError, OSError)) as info, Session(knobs_at(board)) as session:
        session.apply(resolve(spec, knobs_at(board)))
    assert needle in str(info.value)
    assert tree_hash(board) == before


def test_source_label_in_message(board: Path) -> None:
    with pytest.raises(NotOffered, match=r"^EDGEENERGY_GPU_FREQ 700MHz: not offered"):
        resolve(
            {"gpu_freq": "700MHz"}, knobs_at(board), sources={"gpu_freq": "EDGEENERGY_GPU_FREQ"}
        )


def test_apply_pins_and_reads_back_without_session(board: Path) -> None:
    point = OperatingPoint(cpu_freq_hz=1036800000, gpu_freq_hz=612000000, cpu_cores=3)
    result = apply(point, knobs_at(board))
    assert result.ok, result.describe()
    assert read(board, f"{POL0}/scaling_min_freq") == read(board, f"{POL0}/scaling_max_freq")
    assert read(board, f"{POL0}/scaling_max_freq") == "1036800"
    assert read(board, f"{GPU}/min_freq") == read(board, f"{GPU}/max_freq") == "612000000"
    assert read(board, "sys/devices/system/cpu/cpu3/online") == "0"
    assert read(board, "sys/devices/system/cpu/cpu2/online") == "1"
    assert read_back(knobs_at(board))["cores"]["online"] == [0, 1, 2]
    assert check_drift(point, knobs_at(board)) == []


def test_session_restores_byte_identical_and_removes_state(board: Path) -> None:
    before = tree_hash(board)
    with Session(knobs_at(board)) as session:
        session.apply(OperatingPoint(gpu_freq_hz=1020000000, cpu_cores=1, emc_freq_hz=204000000))
        state = board / STATE_IN_ROOT
        saved = load_state(state)
        assert saved is not None and saved.writes, "writes are journaled before they happen"
        assert read(board, f"{EMC}/mrq_rate_locked") == "1"
        assert read(board, "sys/devices/system/cpu/cpu1/online") == "0"
    assert tree_hash(board) == before
    assert not (board / STATE_IN_ROOT).parent.exists()


def test_exception_inside_session_restores(board: Path) -> None:
    before = tree_hash(board)
    with pytest.raises(RuntimeError, match="boom"), Session(knobs_at(board)) as session:
        session.apply(OperatingPoint(cpu_freq_hz=1497600000, governor="performance"))
        raise RuntimeError("boom")
    assert tree_hash(board) == before


def test_points_in_sequence_return_unpinned_knobs_to_baseline(board: Path) -> None:
    with Session(knobs_at(board)) as session:
        session.apply(OperatingPoint(gpu_freq_hz=612000000))
        result = session.apply(OperatingPoint(cpu_freq_hz=729600000))
        assert result.ok
        # The GPU is no longer pinned: back to its snapshot values.
        assert read(board, f"{GPU}/min_freq") == "306000000"
        assert read(board, f"{GPU}/max_freq") == "1020000000"
        assert read(board, f"{POL2}/scaling_max_freq") == "729600"
        session.apply(DVFS)
        assert read(board, f"{POL2}/scaling_max_freq") == "1497600"


def test_dry_run_prints_every_write_and_makes_none(board: Path) -> None:
    before = tree_hash(board)
    out = io.StringIO()
    with Session(knobs_at(board), dry_run=True, out=out) as session:
        result = session.apply(OperatingPoint(gpu_freq_hz=612000000, cpu_cores=2))
    assert tree_hash(board) == before
    text = out.getvalue()
    assert f"/{GPU}/max_freq: 1020000000 -> 612000000" in text
    assert "/sys/devices/system/cpu/cpu3/online: 1 -> 0" in text
    assert result.dry_run and len(result.steps) >= 3


def test_leftover_from_a_dead_session_is_restored_first(board: Path) -> None:
    before = tree_hash(board)
    session = Session(knobs_at(board), handle_signals=False)
    session.start()
    session.apply(OperatingPoint(gpu_freq_hz=612000000, cpu_cores=2))
    # Simulate death: drop the lock without restoring (the kernel does this on SIGKILL).
    session._lock.release(remove=False)
    session._active = False
    assert tree_hash(board) != before
    out = io.StringIO()
    with Session(knobs_at(board), out=out) as fresh:
        assert fresh.leftover is not None and fresh.leftover.found and fresh.leftover.ok
        assert tree_hash(board) == before
    assert "restored the board" in out.getvalue()
    assert restore_leftover(board).found is False


def test_restore_leftover_tool(board: Path) -> None:
    before = tree_hash(board)
    session = Session(knobs_at(board), handle_signals=False)
    session.start()
    session.apply(OperatingPoint(cpu_freq_hz=729600000, governor="powersave"))
    session._lock.release(remove=False)
    session._active = False
    report = restore_leftover(board)
    assert report.found and report.ok and report.restored
    assert "knob file(s) written back" in report.message
    assert tree_hash(board) == before


def test_tampered_state_file_cannot_write_outside_the_knobs(board: Path) -> None:
    session = Session(knobs_at(board), handle_signals=False)
    session.start()
    session.apply(OperatingPoint(gpu_freq_hz=612000000))
    session._lock.release(remove=False)
    session._active = False
    state = board / STATE_IN_ROOT
    text = state.read_text().replace('"path":"etc/hostname"', "")
    text = text.replace('"files":[', '"files":[{"path":"etc/hostname","text":"owned\\n"},', 1)
    state.write_text(text)
    report = restore_leftover(board)
    assert any("etc/hostname" in s for s in report.skipped)
    assert read(board, "etc/hostname") == "board"
    assert read(board, f"{GPU}/max_freq") == "1020000000"


def test_drift_and_thermal_trip(board: Path) -> None:
    point = OperatingPoint(gpu_freq_hz=612000000)
    apply(point, knobs_at(board))
    assert check_drift(point, knobs_at(board)) == []  # 45 C is over the *active* trip only
    (board / GPU / "max_freq").write_text("1020000000\n")
    (board / "sys/devices/virtual/thermal/thermal_zone0/temp").write_text("95500\n")
    drift = check_drift(point, knobs_at(board))
    assert any("max_freq pinned 612000000, now 1020000000" in d for d in drift)
    assert any("95.5 C is over trip point 1 (passive) 90.0 C" in d for d in drift)
    assert len(thermal_trips(knobs_at(board))) == 1


def test_privilege_error_lists_every_file_once(board: Path) -> None:
    knobs = knobs_at(board)
    check_privileges(knobs, access=lambda p, m: False)  # not a real board: not checked
    files = files_for(OperatingPoint(gpu_freq_hz=612000000, cpu_cores=2), knobs)
    with pytest.raises(PrivilegeError) as info:
        check_privileges(knobs, files, real=True, access=lambda p, m: False, euid=1000)
    message = str(info.value)
    assert str(board / GPU / "min_freq") in message
    assert str(board / "sys/devices/system/cpu/cpu3/online") in message
    assert "udev" in message and "run as root" in message
    assert message.count(str(board / GPU / "min_freq")) == 1
    with pytest.raises(PrivilegeError, match="nvpmodel must run as root"):
        check_privileges(knobs, [], needs_nvpmodel=True, real=True, euid=1000)
    check_privileges(knobs, files, real=True, access=lambda p, m: True, euid=1000)


def test_cpu_and_gpu_knobs_show_and_verify(board: Path) -> None:
    knobs = knobs_at(board)
    cpu, gpu = CpufreqKnob(knobs), GpuKnob(knobs)
    assert cpu.available() and gpu.available()
    assert cpu.show()["policy2"]["cpus"] == [2, 3]
    writes = gpu.plan(GpuTarget(freq_hz=1020000000, railgate=False))
    assert writes[0].path.name == "railgate_enable"
    gpu.apply(writes)
    assert gpu.verify() == []
    assert gpu.show()["min_freq_hz"] == 1020000000 and gpu.show()["railgate"] == "0"
    cpu.apply(cpu.plan(CpuTarget(freq_hz=729600000)))
    assert cpu.verify() == []
    (board / POL0 / "scaling_max_freq").write_text("1036800\n")
    mismatches = cpu.verify()
    assert [m.path.name for m in mismatches] == ["scaling_max_freq"]
    assert mismatches[0].expected == "729600" and mismatches[0].actual == "1036800"


def test_residency_time_weighted(board: Path) -> None:
    ticks = iter([0.0, 1.0, 4.0])
    sampler = ResidencySampler(knobs_at(board), interval_s=3600, clock=lambda: next(ticks))
    assert sampler.clocks == ("cpu0", "cpu2", "gpu")
    sampler.start()  # t=0: gpu 306 MHz
    (board / GPU / "cur_freq").write_text("612000000\n")
    sampler.poll()  # t=1: 306 MHz held 1 s
    result = sampler.stop()  # t=4: 612 MHz held 3 s
    assert result["gpu"] == {306000000: 0.25, 612000000: 0.75}
    assert result["cpu0"] == {1036800000: 1.0}
    assert residency_to_json(result)["gpu"] == {"306000000": 0.25, "612000000": 0.75}


def test_residency_thread_runs(board: Path) -> None:
    with ResidencySampler(knobs_at(board), interval_s=0.001) as sampler:
        while sampler.samples < 5:
            time.sleep(0.001)
    shares = sampler.result["gpu"]
    assert set(shares) == {306000000} and abs(sum(shares.values()) - 1.0) < 1e-9


@given(
    st.dictionaries(
        st.integers(1, 3_000_000_000),
        st.floats(1e-9, 1e3, allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=40,
    )
)
def test_residency_json_shares_of_a_clock_sum_to_one(held_s: dict[int, float]) -> None:
    """A clock that visited many frequencies: each share rounded alone drifted the sum by
    up to half a millionth per frequency (a report once summed cpu0 to 1 - 1.5e-6)."""
    total = sum(held_s.values())
    shares = {f: t / total for f, t in held_s.items()}
    rounded = residency_to_json({"cpu0": shares})["cpu0"]
    assert list(rounded) == [str(f) for f in sorted(shares)]
    assert abs(sum(rounded.values()) - 1.0) < 1e-9
    for f, share in shares.items():
        assert abs(rounded[str(f)] - share) < 1e-6 + 1e-12
