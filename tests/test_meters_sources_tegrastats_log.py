"""tegrastats log replay: energy by trapezoid, timing rules, JSON contract, the CLI."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.commands.tegrastats_energy import tegrastats_energy_main
from pytest_edgeenergy.meters.tegrastats import integrate_log

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"
CONTRACT_KEYS = {
    "seconds",
    "interval_ms",
    "samples",
    "valid",
    "invalid_reason",
    "read_errors",
    "sampler_cpu_s",
    "rails",
    "total",
}
T0 = datetime(2026, 1, 2, 3, 4, 5)


def orin_nano_line(vdd_in_mw: float, *, avg_mw: float | None = None, stamp: datetime | None) -> str:
    avg = vdd_in_mw if avg_mw is None else avg_mw
    prefix = stamp.strftime("%m-%d-%Y %H:%M:%S ") if stamp else ""
    return (
        f"{prefix}RAM 1488/7620MB (lfb 105x4MB) CPU [0%@729,0%@729] GR3D_FREQ 0% cpu@47.8C "
        f"VDD_IN {vdd_in_mw:g}mW/{avg:g}mW VDD_CPU_GPU_CV 500mW/500mW VDD_SOC 1500mW/1500mW"
    )


def test_constant_power_with_timestamps_gives_p_times_t() -> None:
    lines = [orin_nano_line(5000, stamp=T0 + timedelta(seconds=k)) for k in range(11)]
    r = integrate_log(lines, interval_s=None)
    assert r.valid and r.invalid_reason is None
    assert r.time_source == "timestamps"
    assert r.samples == 11
    assert r.seconds == 10.0
    assert r.interval_ms == pytest.approx(1000.0)
    assert r.rails["VDD_IN"].energy_j == pytest.approx(50.0)
    assert r.rails["VDD_SOC"].energy_j == pytest.approx(15.0)
    assert r.total.energy_j == pytest.approx(50.0)
    assert r.total.mean_w == pytest.approx(5.0)
    assert r.total_method == "rail" and r.total_rail == "VDD_IN"


def test_no_timestamps_uses_interval() -> None:
    lines = [orin_nano_line(2000, stamp=None) for _ in range(5)]
    r = integrate_log(lines, interval_s=0.5)
    assert r.time_source == "interval"
    assert r.seconds == pytest.approx(2.0)
    assert r.total.energy_j == pytest.approx(4.0)
    assert r.interval_ms == pytest.approx(500.0)


def test_lines_sharing_a_second_fall_back_to_interval() -> None:
    lines = [orin_nano_line(1000, stamp=T0 + timedelta(seconds=k // 4)) for k in range(9)]
    r = integrate_log(lines, interval_s=0.25)
    assert r.time_source == "interval"
    assert r.total.energy_j == pytest.approx(1.0 * 8 * 0.25)
    with pytest.raises(ValueError, match="--interval-ms"):
        integrate_log(lines, interval_s=None)


def test_no_timing_at_all_raises_naming_what_is_needed() -> None:
    with pytest.raises(ValueError, match=r"no timestamps.*interval"):
        integrate_log([orin_nano_line(1000, stamp=None)] * 3, interval_s=None)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_interval_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="interval_s"):
        integrate_log([], interval_s=bad)


def test_trapezoid_not_rectangles_on_a_ramp() -> None:
    lines = [orin_nano_line(1000 * k, stamp=T0 + timedelta(seconds=k)) for k in range(11)]
    r = integrate_log(lines, interval_s=None)
    assert r.rails["VDD_IN"].energy_j == pytest.approx(50.0)  # rectangles: 45 or 55


def test_running_average_is_not_used() -> None:
    lines = [orin_nano_line(3000, avg_mw=99_000, stamp=T0 + timedelta(seconds=k)) for k in range(3)]
    r = integrate_log(lines, interval_s=None)
    assert r.total.energy_j == pytest.approx(6.0)
    assert any("running average" in n for n in r.to_json()["notes"])


def test_garbage_lines_counted_and_keep_their_time_slot() -> None:
    lines = [
        "# comment",
        orin_nano_line(1000, stamp=None),
        "",
        "garbage that is not tegrastats",
        orin_nano_line(1000, stamp=None),
        "RAM 1/2MB VDD_IN 100mW/100mW",  # VDD_SOC missing: unusable
    ]
    r = integrate_log(lines, interval_s=1.0)
    assert r.read_errors == 2
    assert r.to_json()["read_errors"] == {"unusable_line": 2}
    assert r.samples == 2
    assert r.seconds == pytest.approx(2.0)
    assert r.total.energy_j == pytest.approx(2.0)


def test_agx_orin_sum_of_connected_rails() -> None:
    path = SAMPLES / "tegrastats_tx1-tx2-xavier-orin-nano_l4t32-35.txt"
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing")
    orin = next(ln for ln in path.read_text().splitlines() if "VDD_GPU_SOC" in ln)
    r = integrate_log([orin, orin, orin], interval_s=1.0)  # one timestamp shared
    assert r.time_source == "interval"
    assert set(r.rails) == {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}
    assert r.total_method == "sum" and r.total_rail is None
    assert r.total.energy_j == pytest.approx(2 * (2.39 + 0.796 + 3.522 + 0.301))


def test_orin_nano_super_sample_file_by_timestamps() -> None:
    path = SAMPLES / "tegrastats_orin-nano-super_r36.txt"
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing")
    r = integrate_log(path.read_text().splitlines(), interval_s=None)
    assert r.seconds == 13.0
    assert r.rails["VDD_IN"].energy_j == pytest.approx((4.654 + 4.541) / 2 * 13)
    assert r.rails["VDD_SOC"].mean_w == pytest.approx((1.484 + 1.446) / 2)


def test_fewer_than_two_samples_is_invalid_not_zero() -> None:
    r = integrate_log([orin_nano_line(5000, stamp=None), "junk"], interval_s=1.0)
    assert not r.valid
    assert "fewer than 2 samples" in (r.invalid_reason or "")
    assert r.total.energy_j is None
    assert r.rails["VDD_IN"].energy_j is None
    empty = integrate_log([], interval_s=None)
    assert not empty.valid and empty.samples == 0 and empty.rails == {}


def test_to_json_contract_shape() -> None:
    lines = [orin_nano_line(5000, stamp=T0 + timedelta(seconds=k)) for k in range(3)]
    data = integrate_log(lines, interval_s=None).to_json()
    assert set(data) >= CONTRACT_KEYS
    assert set(data["rails"]["VDD_IN"]) == {"energy_j", "mean_w"}
    assert {"energy_j", "mean_w", "method"} <= set(data["total"])
    assert data["total"]["method"] == "rail"
    assert data["sampler_cpu_s"] is None
    assert json.loads(json.dumps(data)) == data


@given(
    power_mw=st.integers(min_value=0, max_value=60_000),
    count=st.integers(min_value=2, max_value=60),
    interval_ms=st.integers(min_value=1, max_value=5000),
)
@settings(max_examples=100, deadline=None)
def test_constant_power_property(power_mw: int, count: int, interval_ms: int) -> None:
    r = integrate_log([orin_nano_line(power_mw, stamp=None)] * count, interval_s=interval_ms / 1e3)
    expected = power_mw / 1e3 * (count - 1) * interval_ms / 1e3
    assert r.total.energy_j == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert r.seconds == pytest.approx((count - 1) * interval_ms / 1e3)


# -- CLI ------------------------------------------------------------------------------


def write_log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "tegrastats.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_log(tmp_path, [orin_nano_line(4000, stamp=None)] * 6)
    assert tegrastats_energy_main([str(log), "--interval-ms", "200", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= CONTRACT_KEYS
    assert data["total"]["energy_j"] == pytest.approx(4.0)
    assert data["interval_ms"] == pytest.approx(200.0)


def test_cli_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_log(tmp_path, [orin_nano_line(4000, stamp=None)] * 6)
    assert tegrastats_energy_main([str(log), "--interval-ms", "1000"]) == 0
    out = capsys.readouterr().out
    assert "VDD_CPU_GPU_CV" in out and "20.000" in out and "rail VDD_IN" in out


def test_cli_missing_file_exit_2_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.log"
    assert tegrastats_energy_main([str(missing), "--json"]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err


def test_cli_directory_is_unreadable_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tegrastats_energy_main([str(tmp_path)]) == 2
    assert str(tmp_path) in capsys.readouterr().err


def test_cli_needs_interval_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_log(tmp_path, [orin_nano_line(4000, stamp=None)] * 3)
    assert tegrastats_energy_main([str(log), "--json"]) == 2
    assert "--interval-ms" in capsys.readouterr().err


def test_cli_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_log(tmp_path, [orin_nano_line(4000, stamp=None)] * 3)
    assert tegrastats_energy_main([str(log), "--interval-ms", "-5"]) == 2
    assert "--interval-ms" in capsys.readouterr().err
    assert tegrastats_energy_main([]) == 2


def test_cli_unusable_log_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_log(tmp_path, [orin_nano_line(4000, stamp=None)])
    assert tegrastats_energy_main([str(log), "--interval-ms", "100", "--json"]) == 2
    captured = capsys.readouterr()
    data = json.loads(captured.out)  # the result is still printed
    assert data["valid"] is False and data["total"]["energy_j"] is None
    assert str(log) in captured.err and "fewer than 2 samples" in captured.err
