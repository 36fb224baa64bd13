"""Operating points on every virtual board model: resolve, apply in order, read back, drift,
residency while the simulator animates the board, and restore."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_edgeenergy.board.detect import detect
from pytest_edgeenergy.control.knobset import KnobSet, knob_set, knobs_at
from pytest_edgeenergy.control.operating_point import (
    DVFS,
    OperatingPoint,
    check_drift,
    read_back,
    resolve,
)
from pytest_edgeenergy.control.residency import ResidencySampler
from pytest_edgeenergy.control.state import Session
from pytest_edgeenergy.control.steps import ToolCall, Write

tree = pytest.importorskip("pytest_edgeenergy.sim.tree", reason="virtual boards not available")
runner = pytest.importorskip("pytest_edgeenergy.sim.runner", reason="virtual boards not available")

MODELS = ("nano", "tx2", "xavier-nx", "agx-xavier", "orin-nano", "orin-nx", "agx-orin", "thor")


def knob_bytes(knobs: KnobSet) -> dict[str, bytes]:
    """The content of every knob file except live values (EMC rate) the simulator moves."""
    return {knobs.rel(p): p.read_bytes() for p in knobs.files if p not in knobs.volatile_files}


@pytest.mark.parametrize("model", MODELS)
def test_pin_verify_animate_restore(model: str, tmp_path: Path) -> None:
    root = tree.create(model, tmp_path / model)
    board = detect(root)
    knobs = knob_set(board)
    before = knob_bytes(knobs)
    assert board.power_mode is not None and board.nvpmodel is not None
    mode = board.nvpmodel.mode(board.power_mode.id).name
    spec = {"power_mode": mode.lower(), "gpu_freq": "max", "cpu_freq": "min", "cpu_cores": "1"}
    if knobs.emc is not None:
        spec["emc_freq"] = "max"
    point = resolve(spec, knobs)
    assert point.power_mode == mode and point.cpu_cores == 1
    assert point.id.startswith(f"{mode}-gpu") and point.id.endswith("-1core")
    with Session(knobs) as session:
        result = session.apply(point)
        assert result.ok, result.describe(root)
        # nvpmodel first, then cores, then clocks: the tool call leads the steps.
        assert isinstance(result.steps[0], ToolCall) and "-m" in result.steps[0].argv
        kinds = [s.knob for s in result.steps if isinstance(s, Write)]
        assert kinds == sorted(kinds, key=["cpu-cores", "cpufreq", "gpu", "emc"].index)
        runner.run(root, duration_s=0.05, seed=1)
        assert check_drift(point, knobs) == []
        with ResidencySampler(knobs, interval_s=3600) as sampler:
            pass
        gpu_top = knobs.gpu.available_freqs_hz[-1] if knobs.gpu else None
        assert sampler.result["gpu"] == {gpu_top: 1.0}
        cpu0 = knobs.policy_for_cpu(0)
        assert cpu0 is not None
        assert sampler.result["cpu0"] == {min(cpu0.available_freqs_hz): 1.0}
        shown = read_back(knobs)
        assert shown["power_mode"]["name"] == mode
        assert shown["cores"]["online"] == [0]
    assert knob_bytes(knobs) == before


def test_drift_is_reported_when_something_moves_the_knobs(tmp_path: Path) -> None:
    root = tree.create("orin-nx", tmp_path / "nx")
    knobs = knobs_at(root)
    point = resolve({"gpu_freq": "612MHz", "power_mode": "40W"}, knobs)
    with Session(knobs) as session:
        assert session.apply(point).ok
        # Another actor selects a different mode (nvpmodel resets the clocks).
        nvpmodel = str(root / "usr/bin/nvpmodel")
        subprocess.run([nvpmodel, "-m", "3"], check=True, capture_output=True, input=b"NO\n")
        drift = check_drift(point, knobs)
        assert any("power mode pinned 40W, now 3 25W" in d for d in drift)
        assert any("min_freq pinned 612000000" in d for d in drift)


def test_dvfs_after_pins_returns_everything(tmp_path: Path) -> None:
    root = tree.create("xavier-nx", tmp_path / "xnx")
    knobs = knobs_at(root)
    before = knob_bytes(knobs)
    with Session(knobs) as session:
        session.apply(resolve({"power_mode": "MODE_10W_4CORE", "gpu_freq": "min"}, knobs))
        session.apply(resolve({"cpu_cores": "2", "governor": "performance"}, knobs))
        assert knob_bytes(knobs) != before
        result = session.apply(DVFS)
        assert result.ok
        assert knob_bytes(knobs) == before  # dvfs = the session's snapshot, mode included
    assert knob_bytes(knobs) == before


def test_copy_of_a_board_is_independent(tmp_path: Path) -> None:
    root = tree.create("nano", tmp_path / "a")
    copy = Path(shutil.copytree(root, tmp_path / "b", symlinks=True))
    with Session(knobs_at(copy)) as session:
        session.apply(OperatingPoint(cpu_cores=1))
        assert (copy / "sys/devices/system/cpu/cpu3/online").read_text() == "0\n"
        assert (root / "sys/devices/system/cpu/cpu3/online").read_text() == "1\n"
