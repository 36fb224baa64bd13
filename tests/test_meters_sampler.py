"""The sampler thread over real tmp_path rail files (values changed in place while it runs)."""

from __future__ import annotations

import errno
import itertools
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import sampler_kinds
from sampler_kinds import ScriptedSource

from pytest_edgeenergy.board.types import Rail, RailMap
from pytest_edgeenergy.meters.ina import InaSource
from pytest_edgeenergy.meters.sampler import Sampler

sampler_kind = sampler_kinds.sampler_kind  # autouse: every test under both samplers

HWMON = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon1"
WAIT_S = 20.0  # generous bound for a loaded 2-core machine; never a speed claim


def write_in_place(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        data = text.encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def make_rails(root: Path, update_interval_s: float | None = None) -> RailMap:
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
    return RailMap(tuple(rails), total_rail="VDD_IN", update_interval_s=update_interval_s)


def wait_until(pred: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.002)


@pytest.fixture
def rails(tmp_path: Path) -> RailMap:
    return make_rails(tmp_path)


@pytest.fixture
def running(rails: RailMap, sampler_kind: str) -> Iterator[tuple[Sampler, RailMap]]:
    src = InaSource(rails, vanish_check_interval_s=0.0)
    sampler = Sampler(src, interval_s=0.002)
    assert sampler.kind == sampler_kind
    sampler.start()
    yield sampler, rails
    sampler.stop()
    src.close()


def test_samples_follow_values_written_in_place(running: tuple[Sampler, RailMap]) -> None:
    sampler, rails = running
    assert sampler.wait_for_samples(5, WAIT_S)
    first = sampler.slice_index(0)
    assert list(first.values[0][:5]) == pytest.approx([10.0] * 5)
    assert list(first.values[1][:5]) == pytest.approx([3.0] * 5)
    current = rails.rails[0].current_file
    assert current is not None
    write_in_place(current, "3000\n")
    wait_until(lambda: sampler.slice_index(0).values[0][-1] == pytest.approx(15.0), "15 W")
    data = sampler.slice_index(0)
    assert len(data.ts) == len(data.values[0]) == len(data.values[1])
    assert all(b > a for a, b in itertools.pairwise(data.ts))
    assert set(round(v, 6) for v in data.values[0]) == {10.0, 15.0}


def test_read_errors_are_counted_by_reason_and_sampling_continues(
    running: tuple[Sampler, RailMap],
) -> None:
    sampler, rails = running
    voltage = rails.rails[1].voltage_file
    assert voltage is not None
    for text, reason in [("", "empty"), ("zz\n", "garbage"), ("-1\n", "negative")]:
        write_in_place(voltage, text)
        wait_until(lambda r=reason: sampler.errors().get(r, 0) >= 2, reason)  # type: ignore[misc]
    voltage.unlink()
    wait_until(lambda: sampler.errors().get("vanished", 0) >= 2, "vanished")
    voltage.write_text("4000\n")
    n = sampler.count
    wait_until(lambda: sampler.count >= n + 5, "samples after recovery")
    data = sampler.slice_index(0)
    assert data.values[1][-1] == pytest.approx(2.4)
    # Only the broken rail failed: every reading kept VDD_IN, NaN marks VDD_CPU_GPU_CV.
    assert all(v == pytest.approx(10.0) for v in data.values[0])
    assert any(math.isnan(v) for v in data.values[1])
    c = sampler.counters()
    assert c.attempts == c.samples + c.failed and c.failed == 0
    assert c.channel_errors[0] == {}
    assert set(c.channel_errors[1]) == {"empty", "garbage", "negative", "vanished"}
    assert c.errors == c.channel_errors[1]
    assert sampler.channel_errors() == {"VDD_CPU_GPU_CV": c.channel_errors[1]}
    assert sampler.running


def test_eagain_from_the_os_is_counted_and_the_run_continues(rails: RailMap) -> None:
    failing = {"on": False}

    def pread(fd: int, n: int, offset: int) -> bytes:
        if failing["on"]:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return os.pread(fd, n, offset)

    with InaSource(rails, pread=pread) as src, Sampler(src, interval_s=0.002) as sampler:
        assert sampler.wait_for_samples(3, WAIT_S)
        failing["on"] = True
        wait_until(lambda: sampler.errors().get("EAGAIN", 0) >= 5, "EAGAIN errors")
        failing["on"] = False
        n = sampler.count
        wait_until(lambda: sampler.count >= n + 3, "samples after EAGAIN")
        assert sampler.last_error is not None and "EAGAIN" in sampler.last_error
        assert set(sampler.errors()) == {"EAGAIN"}


def test_readers_see_readings_the_thread_has_not_decoded_yet(rails: RailMap) -> None:
    # The thread itself would not decode within the test: a huge batch, no file upkeep.
    src = InaSource(rails, vanish_check_interval_s=3600.0)
    with src, Sampler(src, interval_s=0.002, decode_batch=10**6) as sampler:
        assert sampler.wait_for_samples(5, WAIT_S)
        data = sampler.slice_index(0)
        assert len(data) >= 5
        assert list(data.values[0][:5]) == pytest.approx([10.0] * 5)
        n = sampler.count
        wait_until(lambda: sampler.count > n + 3, "readings decoded by the reader")
        c = sampler.counters()
        assert c.samples >= n + 3 and c.errors == {}
        assert sampler.last_time is not None
    # Stopping decodes whatever the thread read last.
    final = sampler.count
    assert final == len(sampler.slice_index(0)) == sampler.counters().samples


def test_decode_errors_are_counted_when_decoded_not_lost(rails: RailMap) -> None:
    voltage = rails.rails[1].voltage_file
    assert voltage is not None
    with InaSource(rails) as src, Sampler(src, interval_s=0.002, decode_batch=10**6) as sampler:
        assert sampler.wait_for_samples(3, WAIT_S)
        write_in_place(voltage, "zz\n")
        wait_until(lambda: sampler.errors().get("garbage", 0) >= 3, "garbage readings")
        c = sampler.counters()
        assert c.attempts == c.samples + c.failed
        assert c.channel_errors[1]["garbage"] == c.errors["garbage"] >= 3
        assert sampler.last_error is not None and "VDD_CPU_GPU_CV" in sampler.last_error


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_decode_batch_is_refused(rails: RailMap, bad: int) -> None:
    with InaSource(rails) as src, pytest.raises(ValueError, match="decode_batch"):
        Sampler(src, interval_s=0.01, decode_batch=bad)


def test_interval_below_the_sensor_period_is_clamped(tmp_path: Path) -> None:
    with InaSource(make_rails(tmp_path, update_interval_s=0.05)) as src:
        sampler = Sampler(src, interval_s=0.01)
        assert sampler.interval_s == 0.05
        assert sampler.requested_interval_s == 0.01
        assert sampler.clamped
        assert sampler.clamp_reason is not None
        assert "10 ms" in sampler.clamp_reason and "50 ms" in sampler.clamp_reason
        slower = Sampler(src, interval_s=0.1)
        assert slower.interval_s == 0.1
        assert not slower.clamped and slower.clamp_reason is None


@pytest.mark.parametrize("bad", [0.0, -0.01, math.nan, math.inf])
def test_bad_interval_is_refused(rails: RailMap, bad: float) -> None:
    with InaSource(rails) as src, pytest.raises(ValueError, match="interval_s"):
        Sampler(src, interval_s=bad)


def test_memory_is_bounded_by_dropping_whole_old_chunks(rails: RailMap) -> None:
    with InaSource(rails) as src:
        sampler = Sampler(src, interval_s=0.001, max_samples=10, chunk_size=4)
        with sampler:
            wait_until(lambda: sampler.count >= 60, "60 samples")
        retained = sampler.count - sampler.first_index
        assert 10 <= retained <= 10 + 2 * 4
        assert sampler.first_index > 0 and sampler.first_index % 4 == 0
        data = sampler.slice_index(0)
        assert data.start_index == sampler.first_index
        assert len(data) == retained
        assert len(sampler.slice_index(sampler.count - 3)) == 3


def test_slice_between_gives_the_window_plus_padding(running: tuple[Sampler, RailMap]) -> None:
    sampler, _ = running
    assert sampler.wait_for_samples(12, WAIT_S)
    sampler.stop()
    ts = list(sampler.slice_index(0).ts)
    got = sampler.slice_between(ts[3], ts[6], pad=1)
    assert list(got.ts) == ts[2:8]
    assert got.start_index == 2
    inner = sampler.slice_between(ts[3] + 1e-9, ts[6] - 1e-9, pad=0)
    assert list(inner.ts) == ts[4:6]
    assert len(sampler.slice_between(ts[-1] + 10, ts[-1] + 20, pad=1)) == 1


def test_counters_and_own_cpu_time(running: tuple[Sampler, RailMap]) -> None:
    sampler, _ = running
    assert sampler.wait_for_samples(20, WAIT_S)
    c = sampler.counters()
    assert c.samples >= 20
    assert c.attempts >= c.samples
    assert c.cpu_s > 0.0
    assert c.cpu_s <= time.process_time()
    assert sampler.last_time is not None


def test_a_broken_source_is_counted_not_fatal() -> None:
    calls = {"n": 0}

    def read() -> Sequence[float]:
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            raise RuntimeError("driver bug")
        if calls["n"] % 3 == 1:
            return [1.0, 2.0]  # wrong number of channels
        return [1.0]

    with Sampler(ScriptedSource(read), interval_s=0.001) as sampler:
        wait_until(lambda: sampler.count >= 5, "good samples")
    errors = sampler.errors()
    assert errors["unexpected:RuntimeError"] >= 1
    assert errors["wrong_length"] >= 1
    assert not sampler.running


def test_overrunning_reads_skip_slots_instead_of_bursting() -> None:
    def slow() -> Sequence[float]:
        time.sleep(0.02)
        return [1.0]

    with Sampler(ScriptedSource(slow), interval_s=0.005) as sampler:
        wait_until(lambda: sampler.count >= 4, "slow samples")
    c = sampler.counters()
    assert c.missed_slots >= c.attempts - 1 >= 3
    ts = sampler.slice_index(0).ts
    # Every read sleeps 20 ms, so no two stamps can be closer: no catch-up burst.
    assert all(b - a >= 0.02 for a, b in itertools.pairwise(ts))


def test_stopped_sampler_cannot_restart(rails: RailMap) -> None:
    with InaSource(rails) as src:
        sampler = Sampler(src, interval_s=0.01)
        sampler.start()
        sampler.start()  # idempotent while running
        sampler.stop()
        assert not sampler.running
        with pytest.raises(RuntimeError, match="new Sampler"):
            sampler.start()
