"""Builders of the report model: stats, metrics, device fingerprint, software, git."""

from __future__ import annotations

import math
import platform
import shutil
import statistics
import subprocess
from datetime import datetime, timedelta, timezone
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.board.types import Identity, Rail, RailMap
from pytest_edgeenergy.report.model import (
    build_device,
    build_header,
    build_params,
    build_result,
    compute_stats,
    device_fingerprint,
    device_label,
    device_slug,
    git_info,
    make_metric,
    parse_timestamp,
    software_versions,
    utc_timestamp,
)
from pytest_edgeenergy.report.schema import is_valid

FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(st.lists(FINITE, min_size=1, max_size=40))
def test_stats_bounds_and_agreement_with_statistics(samples: list[float]) -> None:
    stats = compute_stats(samples)
    assert stats is not None
    assert stats["n"] == len(samples)
    assert stats["min"] == min(samples) and stats["max"] == max(samples)
    assert stats["min"] <= stats["median"] <= stats["max"]
    tol = 1e-9 * max(1.0, max(abs(s) for s in samples))
    assert stats["min"] - tol <= stats["mean"] <= stats["max"] + tol
    assert math.isclose(stats["median"], statistics.median(samples), abs_tol=tol)
    if len(samples) == 1:
        assert stats["stdev"] is None and stats["ci95_low"] is None
    else:
        assert stats["stdev"] is not None and stats["ci95_low"] is not None
        assert stats["ci95_high"] is not None
        assert math.isclose(stats["stdev"], statistics.stdev(samples), rel_tol=1e-6, abs_tol=tol)
        assert stats["ci95_low"] <= stats["mean"] + tol <= stats["ci95_high"] + 2 * tol


def test_stats_interval_uses_student_t() -> None:
    stats = compute_stats([1.0, 2.0, 3.0])
    assert stats is not None
    # t(0.975, 2) = 4.303, s = 1, half width = 4.303 / sqrt(3)
    assert stats["ci95_high"] == pytest.approx(2.0 + 4.303 / math.sqrt(3))


def test_metric_drops_non_finite_samples_and_defaults_value_and_unit() -> None:
    metric = make_metric("energy_j", [1.0, float("nan"), 3.0, float("inf")])
    assert metric["unit"] == "J"
    assert metric["samples"] == [1.0, 3.0]
    assert metric["value"] == 2.0
    assert make_metric("latency_p90", [])["value"] is None
    assert make_metric("edp", [1.0])["unit"] == "J·s"
    assert make_metric("custom", [1.0], unit="K", value=float("nan"))["value"] is None


def test_metric_unknown_name_needs_a_unit() -> None:
    with pytest.raises(ValueError, match=r"'frobs'.*give its unit"):
        make_metric("frobs", [1.0])


def test_params_keep_extra_keys() -> None:
    params = build_params(workload="resnet18", batch_size=8, input_size=224)
    assert params["input_size"] == 224 and params["precision"] is None
    entry = build_result("t::x", status="passed", params=params)
    assert is_valid(entry, "test")


def test_result_rejects_unknown_status() -> None:
    with pytest.raises(ValueError, match="status 'ok' is not one of passed"):
        build_result("t::x", status="ok")  # type: ignore[arg-type]


def test_fingerprint_is_stable_and_sensitive_to_each_field() -> None:
    model, module, soc, l4t = "NVIDIA Jetson AGX Orin", "p3701-0005", "tegra234", "36.4.3"
    base = device_fingerprint(model, module, soc, l4t, False, None)
    assert base == device_fingerprint(model, module, soc, l4t, False, None)
    assert len(base) == 16 and int(base, 16) >= 0
    variants = {
        device_fingerprint("NVIDIA Jetson Orin Nano", module, soc, l4t, False, None),
        device_fingerprint(model, "p3701-0004", soc, l4t, False, None),
        device_fingerprint(model, module, "tegra194", l4t, False, None),
        device_fingerprint(model, module, soc, "35.4.1", False, None),
        device_fingerprint(model, module, soc, l4t, True, None),
        device_fingerprint(model, module, soc, l4t, True, "agx-orin"),
    }
    assert base not in variants and len(variants) == 6


def test_device_from_identity_and_rails(tmp_path: Path) -> None:
    rail = Rail(
        name="VDD_IN",
        chip="ina3221",
        layout="hwmon",
        device="1-0040",
        channel=1,
        directory=tmp_path,
        is_total=True,
    )
    identity = Identity(
        model="NVIDIA Jetson Orin Nano Developer Kit",
        soc="tegra234",
        module="p3767-0005",
        l4t="36.4.3",
        jetpack="6.2",
        kernel="5.15.148-tegra",
    )
    device = build_device(identity, RailMap(rails=(rail,), total_rail="VDD_IN"), "ab" * 32)
    assert device["rails"] == [{"name": "VDD_IN", "is_total": True}]
    assert device["total"] == {"rail": "VDD_IN", "method": "rail"}
    assert device["fingerprint"] == device_fingerprint(
        identity.model, "p3767-0005", "tegra234", "36.4.3", False, None
    )
    assert device_slug(device) == "nvidia-jetson-orin-nano"
    assert "simulated" not in device_label(device)
    header = build_header(device, command_line=["pytest", "-x"], settings={"k": 1})
    assert header["simulated"] is False and header["finished_at"] is None
    assert is_valid({**header, "tests": []})


def test_simulated_device_says_so() -> None:
    identity = Identity(model="x", soc="tegra210", simulated=True, sim_model="nano")
    device = build_device(identity, RailMap(rails=(), total_rail=None))
    assert device["total"]["method"] == "sum"
    assert device_label(device) == "sim:nano (simulated)"
    assert device_slug(device) == "sim-nano"


def test_software_versions_from_metadata() -> None:
    info = software_versions()
    assert info["python"] == platform.python_version()
    try:
        torch_version: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    assert info["torch"] == torch_version


def test_timestamps_are_utc_z_and_round_trip() -> None:
    aware = datetime(2025, 3, 1, 12, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    text = utc_timestamp(aware)
    assert text == "2025-03-01T10:00:05Z"
    assert parse_timestamp(text) == aware
    assert utc_timestamp(datetime(2025, 3, 1, 12, 0, 5)) == "2025-03-01T12:00:05Z"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_info(tmp_path: Path) -> None:
    assert git_info(tmp_path) is None
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "f.txt").write_text("a")
    subprocess.run([*git, "add", "f.txt"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    info = git_info(tmp_path)
    assert info is not None and len(info["commit"]) == 40 and info["dirty"] is False
    (tmp_path / "f.txt").write_text("b")
    changed = git_info(tmp_path)
    assert changed is not None and changed["dirty"] is True


@pytest.mark.parametrize(
    "pair", [(5e-324, 5e-324), (1e308, 1.5e308), (-1.7e308, -1e308), (-1e308, 1e308)]
)
def test_median_of_two_neither_underflows_nor_overflows(pair: tuple[float, float]) -> None:
    stats = compute_stats(list(pair))
    assert stats is not None
    assert min(pair) <= stats["median"] <= max(pair)
    assert math.isfinite(stats["median"])
