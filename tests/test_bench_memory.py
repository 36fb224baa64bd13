"""Memory pre-flight against a virtual board's proc/meminfo, and the process peak probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_edgeenergy.bench.memory import (
    GIB,
    MIB,
    MemInfoError,
    ProcessPeak,
    board_memory_used_bytes,
    check_fits,
    mem_available_bytes,
    probe_peak_bytes,
    read_meminfo,
)
from pytest_edgeenergy.sim.tree import create


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create("orin-nano", tmp_path_factory.mktemp("orin-nano"))


def write_meminfo(root: Path, total_kb: int, available_kb: int | None, free_kb: int = 1000) -> None:
    lines = [f"MemTotal:       {total_kb} kB", f"MemFree:        {free_kb} kB"]
    if available_kb is not None:
        lines.append(f"MemAvailable:   {available_kb} kB")
    lines += ["Buffers:        100 kB", "Cached:         400 kB", "HugePages_Total:       0"]
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc/meminfo").write_text("\n".join(lines) + "\n")


def test_virtual_board_meminfo(board: Path) -> None:
    info = read_meminfo(board)
    total = info["MemTotal"]
    assert 7 * GIB < total <= 8 * GIB  # an 8 GB Orin Nano
    assert mem_available_bytes(board) == info["MemAvailable"]
    assert board_memory_used_bytes(board) == total - info["MemAvailable"]


def test_check_fits_on_a_fresh_board(board: Path) -> None:
    v = check_fits(1 * GIB, board, what="resnet18 bs16")
    assert v.fits and v.checked
    assert v.limit_bytes == v.available_bytes - v.margin_bytes  # type: ignore[operator]
    assert "resnet18 bs16: needs ~1.00 GiB" in v.reason and "fits" in v.reason


def test_check_fits_refuses_when_little_memory_is_left(tmp_path: Path) -> None:
    root = create("orin-nano", tmp_path / "b")
    write_meminfo(root, 7_800_000, 900 * 1024)  # 900 MiB available
    v = check_fits(2 * GIB, root, what="llm-7b fp16")
    assert not v.fits
    assert v.available_bytes == 900 * MIB
    assert v.margin_bytes == pytest.approx(780_000 * 1024, rel=1e-6)  # 10 % of MemTotal
    assert v.reason == (
        "llm-7b fp16: needs ~2.00 GiB, MemAvailable 0.88 GiB less margin 0.74 GiB "
        "= 0.14 GiB: will not fit"
    )
    assert v.to_json()["fits"] is False and v.to_json()["limit_bytes"] == v.limit_bytes
    # an explicit margin is honoured
    assert check_fits(800 * MIB, root, margin_bytes=50 * MIB).fits
    assert not check_fits(800 * MIB, root, margin_bytes=200 * MIB).fits


def test_meminfo_errors_and_old_kernel_fallback(tmp_path: Path) -> None:
    with pytest.raises(MemInfoError, match="proc/meminfo: cannot read"):
        mem_available_bytes(tmp_path)
    assert board_memory_used_bytes(tmp_path) is None
    write_meminfo(tmp_path, 4_000_000, None, free_kb=2000)
    assert read_meminfo(tmp_path)["HugePages_Total"] == 0  # counts are not scaled
    assert read_meminfo(tmp_path)["MemTotal"] == 4_000_000 * 1024
    assert mem_available_bytes(tmp_path) == (2000 + 100 + 400) * 1024
    (tmp_path / "proc/meminfo").write_text("garbage\nMemTotal: x kB\n")
    with pytest.raises(MemInfoError, match="no MemAvailable or MemFree"):
        mem_available_bytes(tmp_path)
    with pytest.raises(ValueError, match="whole number of bytes"):
        check_fits(-1, tmp_path)


def test_process_peak_reads_the_real_process() -> None:
    peak = ProcessPeak()
    rss = peak.rss_bytes()
    hwm = peak.peak_bytes()
    assert rss is not None and hwm is not None and hwm >= rss > 0


def test_probe_extrapolates_allocation_growth() -> None:
    if not ProcessPeak().reset():
        pytest.skip("this kernel does not allow resetting VmHWM (/proc/self/clear_refs)")
    step = 16 * MIB
    # A large block freed before (as other tests or a model load leave behind) raises
    # glibc's mmap threshold, so the probes' blocks come from the heap and stay resident
    # after they are freed: the probe must not count them in its base.
    freed = b"\x02" * (3 * step // 2)
    del freed

    def run(batch: int) -> None:
        buf = b"\x01" * (batch * step)  # written, so resident
        assert buf[-1] == 1

    est = probe_peak_bytes(run, batch_size=8, probe_batches=(1, 2, 3))
    assert est.method == "vmhwm"
    assert set(est.points) == {1, 2, 3}
    for b, grown in est.points.items():
        assert b * step * 0.8 <= grown <= b * step + 32 * MIB
    assert 8 * step * 0.8 <= est.estimate_bytes <= 8 * step + 64 * MIB
    assert est.to_json()["points"]["2"] == est.points[2]


def test_probe_validates_batches() -> None:
    with pytest.raises(ValueError, match="two or more batch sizes"):
        probe_peak_bytes(lambda b: None, batch_size=4, probe_batches=(2, 2))


def test_torch_model_param_bytes() -> None:
    torch = pytest.importorskip("torch")
    from pytest_edgeenergy.bench.memory import model_param_bytes

    model = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.BatchNorm1d(20))
    params = 10 * 20 + 20 + 20 + 20  # linear w+b, bn weight+bias
    buffers = 20 + 20 + 1  # running mean/var (fp32) and num_batches_tracked (int64)
    assert model_param_bytes(model) == 4 * params + 4 * (buffers - 1) + 8
