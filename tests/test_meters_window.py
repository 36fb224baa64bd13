"""Meter windows, validity rules, idle baseline and the ``measure --json`` shape."""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import sampler_kinds

from pytest_edgeenergy.board.types import Rail, RailMap, TotalMethod
from pytest_edgeenergy.meters.ina import InaSource
from pytest_edgeenergy.meters.meter import Meter
from pytest_edgeenergy.meters.source import Quantity, ReadError
from pytest_edgeenergy.meters.window import IdleBaseline, WindowResult

sampler_kind = sampler_kinds.sampler_kind  # autouse: every test under both samplers

HWMON = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon1"
WAIT_S = 20.0  # generous bound for a loaded 2-core machine; never a speed claim
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


def write_in_place(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        data = text.encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def make_rails(
    root: Path, total: str | None = "VDD_IN", update_interval_s: float | None = None
) -> RailMap:
    """VDD_IN 10 W (5 V x 2 A) and VDD_CPU_GPU_CV 3 W (5 V x 0.6 A)."""
    d = root / HWMON
    d.mkdir(parents=True, exist_ok=True)
    rails = []
    for ch, (name, mv, ma) in enumerate(
        [("VDD_IN", 5000, 2000), ("VDD_CPU_GPU_CV", 5000, 600)], start=1
    ):
        (d / f"in{ch}_label").write_text(name + "\n")
        (d / f"in{ch}_input").write_text(f"{mv}\n")
        (d / f"curr{ch}_input").write_text(f"{ma}\n")
        rails.append(
            Rail(
                name,
                "ina3221",
                "hwmon",
                "1-0040",
                ch,
                d,
                voltage_file=d / f"in{ch}_input",
                current_file=d / f"curr{ch}_input",
            )
        )
    return RailMap(tuple(rails), total_rail=total, update_interval_s=update_interval_s)


def wait_until(pred: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.002)


def wait_samples(meter: Meter, n: int) -> None:
    assert meter.sampler.wait_for_samples(n, WAIT_S), f"no {n} samples"


def measured_window(meter: Meter, label: str = "w", after: int = 12) -> WindowResult:
    """A window that holds at least ``after - 1`` samples, however slow the machine is."""
    w = meter.begin(label)
    wait_samples(meter, w.begin_index + after)
    return w.end()


@pytest.fixture
def rails(tmp_path: Path) -> RailMap:
    return make_rails(tmp_path)


@pytest.fixture
def meter(rails: RailMap, sampler_kind: str) -> Iterator[Meter]:
    with Meter(InaSource(rails, simulated=True), interval_s=0.004) as m:
        assert m.sampler.kind == sampler_kind
        yield m


def test_constant_power_window_energy_is_power_times_duration(meter: Meter) -> None:
    r = measured_window(meter)
    assert r.valid, r.invalid_reason
    assert r.invalid_reason is None
    assert r.samples >= 11
    assert r.duration_s == pytest.approx(r.end_s - r.start_s)
    assert r.total.method == "rail" and r.total.rail == "VDD_IN"
    assert r.total.energy_j == pytest.approx(10.0 * r.duration_s, rel=1e-9)
    assert r.total.mean_w == pytest.approx(10.0)
    assert r.total.peak_w == pytest.approx(10.0)
    assert r.rails["VDD_CPU_GPU_CV"].energy_j == pytest.approx(3.0 * r.duration_s, rel=1e-9)
    assert r.rails["VDD_IN"].energy_j == r.total.energy_j
    assert r.total.energy_j_estimate == r.total.energy_j
    assert r.interval_ms_mean is not None and r.interval_ms_mean > 0
    assert r.interval_ms_jitter is not None and r.interval_ms_jitter >= 0
    assert r.interval_ms_target == pytest.approx(4.0)
    assert r.read_errors == {}
    assert 0.0 <= r.sampler_cpu_s <= time.process_time()
    assert r.reads >= r.samples
    assert r.simulated is True and r.source == "ina" and r.quantity == "power_w"
    assert r.idle_w is None and r.net_energy_j is None


def test_without_total_rail_the_total_is_the_sum_of_rails(tmp_path: Path) -> None:
    with Meter(InaSource(make_rails(tmp_path, total=None)), interval_s=0.004) as meter:
        r = measured_window(meter)
    assert r.valid, r.invalid_reason
    assert r.total.method == "sum" and r.total.rail is None
    assert r.total.energy_j == pytest.approx(13.0 * r.duration_s, rel=1e-9)
    assert r.total.peak_w == pytest.approx(13.0)
    assert r.to_json()["total"]["method"] == "sum"


def test_short_window_is_invalid_with_reasons_never_zero_joules(rails: RailMap) -> None:
    with Meter(InaSource(rails), interval_s=0.05) as meter:
        r = meter.begin("blink").end()
    assert not r.valid
    assert r.invalid_reason is not None
    assert "too few samples" in r.invalid_reason and "min_samples 5" in r.invalid_reason
    assert "window too short" in r.invalid_reason and "0.15 s" in r.invalid_reason
    assert r.total.energy_j is None and r.total.mean_w is None
    assert r.rails["VDD_IN"].energy_j is None
    assert r.total.energy_j_estimate is not None and r.total.energy_j_estimate > 0.0
    assert r.total.mean_w_estimate == pytest.approx(10.0)
    doc = json.loads(json.dumps(r.to_json(), allow_nan=False))
    assert doc["valid"] is False
    assert doc["total"]["energy_j"] is None
    assert doc["total"]["energy_j_estimate"] > 0.0
    assert doc["rails"]["VDD_IN"]["energy_j"] is None


def test_too_many_read_errors_make_the_window_invalid(rails: RailMap) -> None:
    failing = {"on": False}

    def pread(fd: int, n: int, offset: int) -> bytes:
        if failing["on"]:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return os.pread(fd, n, offset)

    with Meter(InaSource(rails, pread=pread), interval_s=0.004) as meter:
        w = meter.begin("flaky")
        wait_samples(meter, w.begin_index + 6)
        failing["on"] = True
        wait_until(lambda: meter.sampler.errors().get("EAGAIN", 0) >= 40, "EAGAIN errors")
        failing["on"] = False
        n = meter.sampler.count
        wait_samples(meter, n + 6)
        r = w.end()
        assert r.read_errors["EAGAIN"] >= 40
        assert not r.valid
        assert r.invalid_reason is not None
        assert "too many read errors" in r.invalid_reason
        assert "EAGAIN" in r.invalid_reason and "> 20 %" in r.invalid_reason
        assert r.total.energy_j is None
        # The sampler carried on: a later window is clean again.
        later = measured_window(meter)
        assert later.valid, later.invalid_reason
        assert later.read_errors == {}


def test_idle_baseline_gives_idle_and_net_energy(rails: RailMap) -> None:
    with Meter(InaSource(rails), interval_s=0.004) as meter:
        baseline = meter.measure_idle(0.3)
        assert baseline.valid, baseline.invalid_reason
        assert meter.idle is baseline
        assert baseline.power_w == pytest.approx(10.0)
        assert baseline.rails_w == pytest.approx({"VDD_IN": 10.0, "VDD_CPU_GPU_CV": 3.0})
        assert baseline.samples >= 5
        assert rails.rails[0].current_file is not None
        write_in_place(rails.rails[0].current_file, "5000\n")  # VDD_IN 10 W -> 25 W
        wait_until(
            lambda: (
                abs(meter.sampler.slice_index(meter.sampler.count - 2).values[0][0] - 25.0) < 1e-9
            ),
            "25 W samples",
        )
        r = measured_window(meter, "load")
    assert r.valid, r.invalid_reason
    assert r.total.energy_j == pytest.approx(25.0 * r.duration_s, rel=1e-9)
    assert r.idle_w == pytest.approx(10.0)
    assert r.idle_energy_j == pytest.approx(10.0 * r.duration_s)
    assert r.net_energy_j == pytest.approx(15.0 * r.duration_s, rel=1e-9)
    cpu = r.rails["VDD_CPU_GPU_CV"]
    assert cpu.idle_energy_j == pytest.approx(3.0 * r.duration_s)
    assert cpu.net_energy_j == pytest.approx(0.0, abs=1e-9)
    doc = r.to_json()
    assert doc["net_energy_j"] == pytest.approx(15.0 * r.duration_s, rel=1e-9)
    assert doc["total"]["idle_energy_j"] == pytest.approx(10.0 * r.duration_s)


def test_idle_set_by_hand_and_invalid_idle_is_refused(meter: Meter) -> None:
    meter.idle = IdleBaseline(power_w=4.0, rails_w={"VDD_IN": 4.0}, samples=50, valid=True)
    r = measured_window(meter)
    assert r.net_energy_j == pytest.approx(6.0 * r.duration_s, rel=1e-9)
    assert r.rails["VDD_CPU_GPU_CV"].idle_energy_j is None
    assert r.rails["VDD_CPU_GPU_CV"].net_energy_j is None
    with pytest.raises(ValueError, match="invalid idle baseline: too short"):
        meter.idle = IdleBaseline(1.0, {}, 1, valid=False, invalid_reason="too short")
    meter.idle = None
    assert measured_window(meter).net_energy_j is None


def test_to_json_has_the_contract_keys_and_is_strict_json(meter: Meter) -> None:
    doc = measured_window(meter).to_json()
    assert set(doc) >= CONTRACT_KEYS
    assert set(doc["total"]) >= {"energy_j", "mean_w", "method"}
    assert set(doc["rails"]) == {"VDD_IN", "VDD_CPU_GPU_CV"}
    for rail in doc["rails"].values():
        assert set(rail) >= {"energy_j", "mean_w"}
    assert doc["seconds"] > 0 and doc["samples"] >= 11 and doc["valid"] is True
    assert doc["invalid_reason"] is None and doc["read_errors"] == {}
    assert isinstance(doc["interval_ms"], float) and isinstance(doc["sampler_cpu_s"], float)
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc


def test_window_context_manager_and_overlapping_windows(meter: Meter) -> None:
    with meter.window("outer") as outer:
        with pytest.raises(RuntimeError, match="has not ended"):
            _ = outer.result
        inner = meter.begin("inner")
        wait_samples(meter, inner.begin_index + 12)
        r_inner = inner.end()
        assert inner.end() is r_inner
        wait_samples(meter, meter.sampler.count + 3)
    r_outer = outer.result
    assert r_outer.label == "outer" and r_inner.label == "inner"
    assert r_outer.start_s < r_inner.start_s and r_outer.end_s > r_inner.end_s
    assert r_outer.samples > r_inner.samples
    assert r_outer.total.energy_j == pytest.approx(10.0 * r_outer.duration_s, rel=1e-9)


def test_window_longer_than_retention_is_invalid(rails: RailMap) -> None:
    with Meter(InaSource(rails), interval_s=0.002, max_samples=8) as meter:
        w = meter.begin("long")
        wait_samples(meter, w.begin_index + 60)
        r = w.end()
    assert not r.valid
    assert r.invalid_reason is not None and "samples dropped" in r.invalid_reason


def test_clamped_interval_and_minimum_duration_rules(tmp_path: Path) -> None:
    rails = make_rails(tmp_path, update_interval_s=0.05)
    with Meter(InaSource(rails), interval_s=0.01) as meter:
        assert meter.interval_s == 0.05
        assert meter.min_duration_s == pytest.approx(0.15)
        r = meter.begin().end()
        assert r.interval_clamp_reason is not None and "50 ms" in r.interval_clamp_reason
        assert r.to_json()["interval_clamp_reason"] == r.interval_clamp_reason
    with Meter(InaSource(rails), interval_s=0.1, min_window_s=1.0) as meter:
        assert meter.min_duration_s == 1.0
        assert "min_window_s" in meter.rules.min_duration_why
        r = meter.begin().end()
        assert r.invalid_reason is not None and "min_window_s 1 s" in r.invalid_reason


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_samples": 0}, "min_samples"),
        ({"min_samples": True}, "min_samples"),
        ({"max_error_fraction": 1.5}, "max_error_fraction"),
        ({"min_window_s": -1.0}, "min_window_s"),
        ({"interval_s": 0.0}, "interval_s"),
    ],
)
def test_bad_meter_settings_are_refused(
    rails: RailMap, kwargs: dict[str, object], match: str
) -> None:
    with InaSource(rails) as src, pytest.raises(ValueError, match=match):
        Meter(src, **kwargs)  # type: ignore[arg-type]


def test_measure_refuses_bad_seconds_and_close_closes_the_source(rails: RailMap) -> None:
    src = InaSource(rails)
    meter = Meter(src, interval_s=0.01)
    with pytest.raises(ValueError, match="seconds"):
        meter.measure(0.0)
    meter.close()
    meter.close()
    assert not meter.sampler.running
    with pytest.raises(ReadError, match="closed"):
        src.read()
    with pytest.raises(RuntimeError, match="closed"):
        meter.begin()


class CounterSource:
    """A cumulative energy counter rising at a constant ``power_w`` (like RAPL, unwrapped)."""

    name = "counter"
    quantity: Quantity = "energy_j"
    channels = ("package-0", "dram")
    total_channel = None
    total_method: TotalMethod = "sum"
    min_interval_s = None
    simulated = True

    def __init__(self, power_w: float) -> None:
        self._p = power_w
        self._t0 = time.monotonic()

    def read(self) -> Sequence[float]:
        e = self._p * (time.monotonic() - self._t0)
        return [e, e / 2.0]

    def close(self) -> None:
        pass


def test_energy_counters_give_differences(tmp_path: Path) -> None:
    with Meter(CounterSource(20.0), interval_s=0.004) as meter:
        r = measured_window(meter)
    assert r.valid, r.invalid_reason
    assert r.quantity == "energy_j"
    assert r.rails["package-0"].energy_j == pytest.approx(20.0 * r.duration_s, rel=1e-2)
    assert r.rails["dram"].energy_j == pytest.approx(10.0 * r.duration_s, rel=1e-2)
    assert r.total.energy_j == pytest.approx(30.0 * r.duration_s, rel=1e-2)
    assert r.total.mean_w == pytest.approx(30.0, rel=1e-2)
    assert r.total.peak_w is not None and r.total.peak_w > 0.0


class NestedCounterSource(CounterSource):
    """Like RAPL: ``dram`` here is part of ``package-0``, so only the package is summed."""

    sum_channels = ("package-0",)


def test_declared_sum_channels_are_the_total() -> None:
    with Meter(NestedCounterSource(20.0), interval_s=0.004) as meter:
        r = measured_window(meter)
    assert r.valid, r.invalid_reason
    assert r.total.method == "sum"
    assert r.total.energy_j == pytest.approx(20.0 * r.duration_s, rel=1e-2)
    assert r.rails["dram"].energy_j == pytest.approx(10.0 * r.duration_s, rel=1e-2)


def test_sum_channels_must_be_real_channels() -> None:
    src = NestedCounterSource(1.0)
    src.sum_channels = ("package-1",)
    with pytest.raises(ValueError, match=r"sum_channels \['package-1'\] are not among"):
        Meter(src)


def test_stop_keeps_the_source_open_and_open_windows_can_end(rails: RailMap) -> None:
    src = InaSource(rails)
    meter = Meter(src, interval_s=0.004)
    w = meter.begin("before-stop")
    wait_samples(meter, w.begin_index + 12)
    meter.stop()
    assert not meter.sampler.running
    assert list(src.read()) == pytest.approx([10.0, 3.0])
    r = w.end()
    assert r.samples >= 11
    assert r.total.energy_j_estimate == pytest.approx(10.0 * r.duration_s, rel=1e-9)
    with pytest.raises(RuntimeError, match="stopped"):
        meter.begin()
    meter.close()
    with pytest.raises(ReadError, match="closed"):
        src.read()
