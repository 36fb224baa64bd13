"""Live tegrastats source against small fake ``tegrastats`` programs (and the sim's shim).

The fakes are external programs written into a tmp root at ``usr/bin/tegrastats``; the
source under test runs them exactly as it runs the real one.
"""

from __future__ import annotations

import gc
import os
import shlex
from pathlib import Path

import pytest

from pytest_edgeenergy.meters.source import PowerSource, ReadError, SourceUnavailable
from pytest_edgeenergy.meters.tegrastats import TegrastatsSource

ORIN_NANO = (
    "05-05-2025 06:05:39 RAM 2639/7620MB (lfb 9x4MB) CPU [1%@729,4%@729] GR3D_FREQ 0% "
    "cpu@44.156C VDD_IN 5263mW/5263mW VDD_CPU_GPU_CV 717mW/717mW VDD_SOC 1794mW/1794mW"
)
AGX_ORIN = (
    "RAM 2257/30536MB CPU [7%@729] CV0@-256C VDD_GPU_SOC 2390mW/2390mW VDD_CPU_CV 796mW/796mW "
    "VIN_SYS_5V0 3522mW/3522mW NC 0mW/0mW VDDQ_VDD2_1V8AO 301mW/301mW NC 0mW/0mW"
)
NO_POWER = "RAM 388/3984MB (lfb 779x4MB) CPU [7%@1734] APE 25 AO@30.5C"


def fake_tegrastats(
    root: Path, *, first: list[str], loop: list[str] | None, stderr: str = "", code: int = 0
) -> Path:
    """Write ``root/usr/bin/tegrastats``: records its args, prints ``first`` then ``loop``
    forever (every 20 ms), or exits with ``code`` when ``loop`` is None."""
    exe = root / "usr" / "bin" / "tegrastats"
    exe.parent.mkdir(parents=True, exist_ok=True)
    body = ["#!/bin/sh", f'echo "$@" > {shlex.quote(str(root / "args"))}']
    body += [f"echo {shlex.quote(ln)}" for ln in first]
    if stderr:
        body.append(f"echo {shlex.quote(stderr)} >&2")
    if loop is None:
        body.append(f"exit {code}")
    else:
        body.append("while :; do")
        body += [f"  echo {shlex.quote(ln)}" for ln in loop]
        body.append("  sleep 0.02")
        body.append("done")
    exe.write_text("\n".join(body) + "\n")
    exe.chmod(0o755)
    return exe


def test_reads_rails_and_passes_interval(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=[ORIN_NANO])
    src = TegrastatsSource(tmp_path, interval_s=0.05)
    try:
        assert isinstance(src, PowerSource)
        assert src.name == "tegrastats"
        assert src.quantity == "power_w"
        assert src.channels == ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")
        assert src.total_channel == "VDD_IN" and src.total_method == "rail"
        assert src.min_interval_s == 0.05
        assert src.simulated is False
        for _ in range(3):
            assert list(src.read()) == [5.263, 0.717, 1.794]
        assert src.last_sample is not None and src.last_sample.temps_c["cpu"] == 44.156
        assert (tmp_path / "args").read_text().split() == ["--interval", "50"]
    finally:
        src.close()


def test_nc_rails_are_not_channels_and_total_is_sum(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=[AGX_ORIN])
    with TegrastatsSource(tmp_path, interval_s=0.02) as src:
        assert src.channels == ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO")
        assert src.total_channel is None and src.total_method == "sum"
        assert list(src.read()) == [2.39, 0.796, 3.522, 0.301]


def test_close_stops_the_process(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=[ORIN_NANO])
    src = TegrastatsSource(tmp_path, interval_s=0.02)
    pid = src.pid
    os.kill(pid, 0)  # running
    src.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    src.close()  # idempotent
    with pytest.raises(ReadError, match="closed"):
        src.read()


def test_forgotten_source_stops_its_process_when_collected(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=[ORIN_NANO])
    src = TegrastatsSource(tmp_path, interval_s=0.02)
    pid = src.pid
    del src
    gc.collect()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_process_exit_becomes_read_error_with_stderr(tmp_path: Path) -> None:
    fake_tegrastats(
        tmp_path, first=[ORIN_NANO, ORIN_NANO], loop=None, stderr="boom: lost i2c", code=3
    )
    with TegrastatsSource(tmp_path, interval_s=0.001) as src:
        with pytest.raises(ReadError) as info:
            for _ in range(5):
                assert list(src.read()) == [5.263, 0.717, 1.794]
        assert "exited (code 3)" in str(info.value)
        assert "boom: lost i2c" in str(info.value)


def test_line_missing_a_rail_is_a_read_error_naming_it(tmp_path: Path) -> None:
    partial = ORIN_NANO.replace(" VDD_SOC 1794mW/1794mW", "")
    fake_tegrastats(tmp_path, first=[ORIN_NANO], loop=[partial])
    with TegrastatsSource(tmp_path, interval_s=0.02) as src:
        with pytest.raises(ReadError) as info:
            for _ in range(3):
                src.read()
        assert info.value.channel == "VDD_SOC"


def test_missing_executable_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match=r"tegrastats not found at .*usr/bin/tegrastats"):
        TegrastatsSource(tmp_path, interval_s=0.1)


def test_not_executable_is_unavailable(tmp_path: Path) -> None:
    exe = fake_tegrastats(tmp_path, first=[], loop=[ORIN_NANO])
    exe.chmod(0o644)
    if os.access(exe, os.X_OK):
        pytest.skip("running as a user who may execute any file")
    with pytest.raises(SourceUnavailable, match="not executable"):
        TegrastatsSource(tmp_path, interval_s=0.1)


def test_first_line_without_power_is_unavailable(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=[NO_POWER])
    with pytest.raises(SourceUnavailable, match="no power fields"):
        TegrastatsSource(tmp_path, interval_s=0.02)


def test_exit_before_any_line_is_unavailable(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=None, stderr="tegrastats: permission denied", code=1)
    with pytest.raises(SourceUnavailable, match=r"exited \(code 1\).*permission denied"):
        TegrastatsSource(tmp_path, interval_s=0.02)


def test_simulated_when_virtual_board_marker_exists(tmp_path: Path) -> None:
    fake_tegrastats(tmp_path, first=[], loop=[ORIN_NANO])
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "edgeenergy-virtual-board.json").write_text("{}")
    with TegrastatsSource(tmp_path, interval_s=0.02) as src:
        assert src.simulated is True


@pytest.mark.parametrize("bad", [0.0, -1.0, 0.0001, float("nan")])
def test_bad_interval_rejected(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="interval_s"):
        TegrastatsSource(tmp_path, interval_s=bad)


def test_against_virtual_board_shim(tmp_path: Path) -> None:
    tree = pytest.importorskip(
        "pytest_edgeenergy.sim.tree", reason="virtual board (sim.tree) not written yet"
    )
    root = tmp_path / "board"
    tree.create("orin-nano", root)
    if not (root / "usr" / "bin" / "tegrastats").is_file():
        pytest.skip("this virtual board has no tegrastats shim")
    with TegrastatsSource(root, interval_s=0.1) as src:
        assert src.simulated is True
        assert "VDD_IN" in src.channels and src.total_channel == "VDD_IN"
        values = src.read()
        assert len(values) == len(src.channels)
        assert all(v >= 0.0 for v in values)
        assert values[src.channels.index("VDD_IN")] > 0.0
