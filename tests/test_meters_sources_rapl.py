"""RAPL source over fixture powercap trees: zones, wrap-around, totals, errors."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.meters.rapl import RaplSource
from pytest_edgeenergy.meters.source import PowerSource, ReadError, SourceUnavailable

RANGE_UJ = 999_999


def zone(root: Path, zone_dir: str, name: str, energy_uj: int, max_uj: int = RANGE_UJ) -> Path:
    d = root / "sys" / "class" / "powercap" / zone_dir
    d.mkdir(parents=True, exist_ok=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d / "energy_uj"


def set_uj(path: Path, value: int) -> None:
    path.write_text(f"{value}\n")


def laptop(root: Path) -> dict[str, Path]:
    """package-0 with core/uncore subzones, a top-level psys, the control dir and mmio."""
    files = {
        "package-0": zone(root, "intel-rapl:0", "package-0", 100_000),
        "core": zone(root, "intel-rapl:0:0", "core", 40_000),
        "uncore": zone(root, "intel-rapl:0:1", "uncore", 5_000),
        "psys": zone(root, "intel-rapl:1", "psys", 300_000),
    }
    (root / "sys/class/powercap/intel-rapl").mkdir()
    (root / "sys/class/powercap/intel-rapl/enabled").write_text("1\n")
    zone(root, "intel-rapl-mmio:0", "package-0", 777)
    return files


def test_zones_channels_and_protocol(tmp_path: Path) -> None:
    laptop(tmp_path)
    src = RaplSource(tmp_path)
    assert isinstance(src, PowerSource)
    assert src.name == "rapl" and src.quantity == "energy_j"
    assert src.channels == ("package-0", "core", "uncore", "psys")  # mmio ignored
    assert src.total_channel is None and src.total_method == "sum"
    assert src.sum_channels == ("package-0",)
    assert src.simulated is False
    assert list(src.read()) == [0.1, 0.04, 0.005, 0.3]


def test_subzones_and_psys_not_added_to_total(tmp_path: Path) -> None:
    files = laptop(tmp_path)
    src = RaplSource(tmp_path)
    before = src.total_j(src.read())
    set_uj(files["package-0"], 600_000)
    set_uj(files["core"], 440_000)
    set_uj(files["psys"], 900_000)
    assert src.total_j(src.read()) - before == pytest.approx(0.5)


def test_two_sockets_with_top_level_dram_and_duplicate_names(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "package-0", 1_000)
    zone(tmp_path, "intel-rapl:0:0", "dram", 2_000)
    zone(tmp_path, "intel-rapl:1", "package-1", 3_000)
    zone(tmp_path, "intel-rapl:1:0", "dram", 4_000)
    zone(tmp_path, "intel-rapl:2", "dram", 5_000)
    zone(tmp_path, "intel-rapl:10", "package-10", 6_000)
    src = RaplSource(tmp_path)
    assert src.channels == (
        "package-0",
        "dram@0:0",
        "package-1",
        "dram@1:0",
        "dram@2",
        "package-10",
    )
    assert src.sum_channels == ("package-0", "package-1", "dram@2", "package-10")
    assert src.total_j(src.read()) == pytest.approx((1_000 + 3_000 + 5_000 + 6_000) / 1e6)


def test_wrap_around_adds_the_range(tmp_path: Path) -> None:
    pkg = zone(tmp_path, "intel-rapl:0", "package-0", 900_000)
    src = RaplSource(tmp_path)
    assert src.read()[0] == pytest.approx(0.9)
    set_uj(pkg, 100_000)  # wrapped: 999_999 -> 0 -> 100_000
    assert src.read()[0] == pytest.approx((100_000 + RANGE_UJ + 1) / 1e6)
    set_uj(pkg, 950_000)
    assert src.read()[0] == pytest.approx((950_000 + RANGE_UJ + 1) / 1e6)
    set_uj(pkg, 10)
    assert src.read()[0] == pytest.approx((10 + 2 * (RANGE_UJ + 1)) / 1e6)


@given(
    start=st.integers(min_value=0, max_value=RANGE_UJ),
    steps=st.lists(st.integers(min_value=0, max_value=RANGE_UJ), min_size=1, max_size=20),
)
@settings(max_examples=60, deadline=None)
def test_unwrapped_counter_follows_true_energy(start: int, steps: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pkg = zone(root, "intel-rapl:0", "package-0", start)
        src = RaplSource(root)
        first = src.read()[0]
        true_uj = 0
        for step in steps:
            true_uj += step
            set_uj(pkg, (start + true_uj) % (RANGE_UJ + 1))
            assert src.read()[0] - first == pytest.approx(true_uj / 1e6, abs=1e-9)


def test_no_zones_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match=r"no RAPL zones under .*powercap"):
        RaplSource(tmp_path)
    (tmp_path / "sys/class/powercap/intel-rapl").mkdir(parents=True)
    with pytest.raises(SourceUnavailable, match="no RAPL zones"):
        RaplSource(tmp_path)


def test_garbage_or_vanished_counter_is_a_read_error(tmp_path: Path) -> None:
    pkg = zone(tmp_path, "intel-rapl:0", "package-0", 5)
    src = RaplSource(tmp_path)
    set_uj(pkg, "not a number")  # type: ignore[arg-type]
    with pytest.raises(ReadError) as info:
        src.read()
    assert info.value.channel == "package-0"
    pkg.unlink()
    with pytest.raises(ReadError, match="energy_uj"):
        src.read()


def test_missing_range_file_is_unavailable(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "package-0", 5)
    (tmp_path / "sys/class/powercap/intel-rapl:0/max_energy_range_uj").unlink()
    with pytest.raises(SourceUnavailable, match="max_energy_range_uj"):
        RaplSource(tmp_path)


def _expect_permission_message(root: Path) -> None:
    with pytest.raises(SourceUnavailable) as info:
        RaplSource(root)
    msg = str(info.value)
    assert "energy_uj" in msg and "permission denied" in msg and "chmod" in msg


def test_unreadable_counter_explains_how_to_grant_access() -> None:
    # A world-traversable directory, so that an unprivileged child can reach the tree.
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)
        pkg = zone(root, "intel-rapl:0", "package-0", 5)
        for d in (root / "sys", root / "sys/class", root / "sys/class/powercap", pkg.parent):
            os.chmod(d, 0o755)
        os.chmod(pkg.parent / "name", 0o644)
        os.chmod(pkg.parent / "max_energy_range_uj", 0o644)
        os.chmod(pkg, 0o400)  # root-only, as on kernels >= 5.10
        if os.geteuid() != 0:
            os.chmod(pkg, 0o000)
            _expect_permission_message(root)
            return
        # As root every file is readable: check in a child that drops to 'nobody'.
        pid = os.fork()
        if pid == 0:  # child: never returns into pytest
            status = 3
            try:
                os.setgid(65534)
                os.setuid(65534)
                try:
                    _expect_permission_message(root)
                    status = 0
                except BaseException:
                    status = 1
            except BaseException:
                status = 2
            finally:
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(wait_status)
        if code == 2:
            pytest.skip("cannot drop privileges to uid 65534 here")
        assert code == 0, "unprivileged reader did not get the permission message"
