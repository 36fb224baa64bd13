"""Validity per rail: one broken rail (garbage, EIO, vanished) fails alone.

Fixture trees hold one rail of each driver style besides the total: INA3221 hwmon
(``VDD_CPU``, mV x mA), INA3221 iio (``POM_5V_GPU``, mW) and INA238 (``VDD_GPU``, µW), all
at constant power, so every valid energy is exactly power x duration.
"""

from __future__ import annotations

import errno
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sampler_kinds

from pytest_edgeenergy.board.rails import discover_rails
from pytest_edgeenergy.board.types import Rail, RailMap
from pytest_edgeenergy.commands import main
from pytest_edgeenergy.meters.ina import InaSource
from pytest_edgeenergy.meters.meter import Meter
from pytest_edgeenergy.meters.source import PreadFn
from pytest_edgeenergy.meters.window import WindowResult
from pytest_edgeenergy.present.measure import window_text
from pytest_edgeenergy.present.summary import validity_text
from pytest_edgeenergy.report.schema import validate
from pytest_edgeenergy.report.windows import validity_of, window_metrics
from pytest_edgeenergy.sim.tree import create

sampler_kind = sampler_kinds.sampler_kind  # autouse: every test under both samplers

HWMON = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon1"
IIO = "sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0"
INA238 = "sys/bus/i2c/drivers/ina238/2-0044/hwmon/hwmon6"
WAIT_S = 20.0  # generous bound for a loaded 2-core machine; never a speed claim
POWER_W = {"VDD_IN": 10.0, "VDD_CPU": 3.0, "POM_5V_GPU": 1.234, "VDD_GPU": 5.5}
FAILING = ["VDD_CPU", "POM_5V_GPU", "VDD_GPU"]  # hwmon, iio, INA238


def write_in_place(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        data = text.encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _hwmon(root: Path, name: str, ch: int, mv: int, ma: int) -> Rail:
    d = root / HWMON
    d.mkdir(parents=True, exist_ok=True)
    (d / f"in{ch}_label").write_text(name + "\n")
    (d / f"in{ch}_input").write_text(f"{mv}\n")
    (d / f"curr{ch}_input").write_text(f"{ma}\n")
    return Rail(
        name,
        "ina3221",
        "hwmon",
        "1-0040",
        ch,
        d,
        voltage_file=d / f"in{ch}_input",
        current_file=d / f"curr{ch}_input",
    )


def make_tree(root: Path, *, total: str | None) -> RailMap:
    """VDD_IN 10 W and VDD_CPU 3 W (hwmon), POM_5V_GPU 1.234 W (iio), VDD_GPU 5.5 W (INA238)."""
    iio = root / IIO
    iio.mkdir(parents=True)
    (iio / "rail_name_0").write_text("POM_5V_GPU\n")
    (iio / "in_power0_input").write_text("1234\n")
    ina238 = root / INA238
    ina238.mkdir(parents=True)
    (ina238 / "power1_input").write_text("5500000\n")
    rails: tuple[Rail, ...] = (
        _hwmon(root, "VDD_IN", 1, 5000, 2000),
        _hwmon(root, "VDD_CPU", 2, 5000, 600),
        Rail(
            "POM_5V_GPU",
            "ina3221",
            "iio",
            "6-0040",
            0,
            iio,
            power_file=iio / "in_power0_input",
            power_scale_w=1e-3,
        ),
        Rail(
            "VDD_GPU",
            "ina238",
            "hwmon",
            "2-0044",
            1,
            ina238,
            power_file=ina238 / "power1_input",
            power_scale_w=1e-6,
        ),
    )
    if total is None:
        rails = rails[1:]
    return RailMap(rails, total_rail=total)


def value_file(rails: RailMap, name: str) -> Path:
    """The file that breaks the rail: the current file (hwmon), else the power file."""
    return next(r for r in rails.rails if r.name == name).files[-1]


def wait_until(pred: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.002)


def eio_on(path: Path, failing: dict[str, bool]) -> PreadFn:
    """An os.pread that fails with EIO on ``path`` while ``failing["on"]``."""

    def pread(fd: int, n: int, offset: int) -> bytes:
        if failing["on"] and os.path.samefile(f"/proc/self/fd/{fd}", path):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return os.pread(fd, n, offset)

    return pread


class Breaker:
    """Breaks one rail file as ``kind`` says (garbage text, EIO, removed) and repairs it."""

    def __init__(self, rails: RailMap, name: str, kind: str) -> None:
        self.path = value_file(rails, name)
        self.kind = kind
        self.text = self.path.read_text()
        self.failing = {"on": False}

    def source(self, rails: RailMap) -> InaSource:
        pread = eio_on(self.path, self.failing) if self.kind == "EIO" else os.pread
        # Upkeep before every reading: a removed file is seen at the next reading.
        return InaSource(rails, pread=pread, vanish_check_interval_s=0.0)

    @property
    def reason(self) -> str:
        return {"garbage": "garbage", "EIO": "EIO", "vanish": "vanished"}[self.kind]

    def breaks(self) -> None:
        if self.kind == "garbage":
            write_in_place(self.path, "garbage\n")
        elif self.kind == "EIO":
            self.failing["on"] = True
        else:
            self.path.unlink()

    def repair(self) -> None:
        if self.kind == "garbage":
            write_in_place(self.path, self.text)
        elif self.kind == "EIO":
            self.failing["on"] = False
        else:
            self.path.write_text(self.text)  # a new file: reopened by the sampler


def window_around(meter: Meter, breaker: Breaker, name: str, *, errors: int) -> WindowResult:
    """A window in which rail ``name`` fails at least ``errors`` times after some good
    samples; ``breaker`` is repaired before the window ends."""
    w = meter.begin("w")
    assert meter.sampler.wait_for_samples(w.begin_index + 6, WAIT_S)
    breaker.breaks()
    wait_until(
        lambda: meter.sampler.channel_errors().get(name, {}).get(breaker.reason, 0) >= errors,
        f"{errors} {breaker.reason} errors on {name}",
    )
    breaker.repair()
    n = meter.sampler.count
    assert meter.sampler.wait_for_samples(n + 3, WAIT_S)
    return w.end()


def assert_exact(r: WindowResult, names: list[str]) -> None:
    for name in names:
        rail = r.rails[name]
        assert rail.valid and rail.invalid_reason is None, name
        assert rail.read_errors == {}, name
        assert rail.samples == r.samples, name
        assert rail.energy_j == pytest.approx(POWER_W[name] * r.duration_s, rel=1e-9), name


@pytest.fixture(params=["garbage", "EIO", "vanish"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("failing", FAILING)
def test_a_failing_rail_keeps_the_total_rail_and_the_other_rails_valid(
    tmp_path: Path, kind: str, failing: str
) -> None:
    rails = make_tree(tmp_path, total="VDD_IN")
    breaker = Breaker(rails, failing, kind)
    with Meter(breaker.source(rails), interval_s=0.004) as meter:
        r = window_around(meter, breaker, failing, errors=40)

    assert r.valid, r.invalid_reason
    assert r.invalid_reason is None
    assert r.total.method == "rail" and r.total.rail == "VDD_IN"
    assert r.total.energy_j == pytest.approx(10.0 * r.duration_s, rel=1e-9)
    assert_exact(r, [n for n in POWER_W if n != failing])

    bad = r.rails[failing]
    n_failed = bad.read_errors[breaker.reason] if bad.read_errors else 0
    assert n_failed >= 40
    assert set(bad.read_errors or {}) == {breaker.reason}
    # Each reading gave the rail a value or a failure. Reads are counted by the sampler's
    # counters, taken just outside the edges: a reading there counts in reads only.
    assert bad.samples is not None and 0 <= r.reads - (bad.samples + n_failed) <= 2
    assert not bad.valid
    assert bad.energy_j is None and bad.mean_w is None and bad.net_energy_j is None
    assert f"{n_failed} of {r.reads} reads failed ({breaker.reason}: {n_failed})" in (
        bad.invalid_reason or ""
    )
    assert r.invalid_rails == {failing: bad.invalid_reason}
    assert r.read_errors == {breaker.reason: n_failed}
    # Where the rail was read (before and after the failure), its values were right.
    assert bad.energy_j_estimate == pytest.approx(POWER_W[failing] * r.duration_s, rel=1e-9)

    doc = json.loads(json.dumps(r.to_json(), allow_nan=False))
    assert doc["valid"] is True and doc["total"]["energy_j"] is not None
    assert doc["rails"][failing]["energy_j"] is None
    assert doc["rails"][failing]["valid"] is False
    assert doc["rails"][failing]["read_errors"] == {breaker.reason: n_failed}
    assert doc["rails"]["VDD_IN"]["valid"] is True
    assert doc["invalid_rails"] == {failing: bad.invalid_reason}


@pytest.mark.parametrize("failing", FAILING)
def test_a_failing_rail_of_a_sum_of_rails_makes_the_total_invalid_naming_it(
    tmp_path: Path, kind: str, failing: str
) -> None:
    rails = make_tree(tmp_path, total=None)
    breaker = Breaker(rails, failing, kind)
    with Meter(breaker.source(rails), interval_s=0.004) as meter:
        r = window_around(meter, breaker, failing, errors=40)

    assert r.total.method == "sum"
    assert not r.valid
    assert r.invalid_reason is not None
    assert r.invalid_reason.startswith(f"rail {failing} (summed into the total): ")
    assert f"({breaker.reason}: " in r.invalid_reason
    assert r.total.energy_j is None and r.total.mean_w is None
    assert r.net_energy_j is None
    # The estimate bridges the failed reads; it never leaves the rail out.
    summed_w = sum(w for n, w in POWER_W.items() if n != "VDD_IN")
    assert r.total.energy_j_estimate == pytest.approx(summed_w * r.duration_s, rel=1e-9)
    assert_exact(r, [n for n in POWER_W if n not in (failing, "VDD_IN")])
    assert not r.rails[failing].valid
    assert list(r.invalid_rails) == [failing]


def test_a_failing_total_rail_makes_the_window_invalid_but_not_the_other_rails(
    tmp_path: Path, kind: str
) -> None:
    rails = make_tree(tmp_path, total="VDD_IN")
    breaker = Breaker(rails, "VDD_IN", kind)
    with Meter(breaker.source(rails), interval_s=0.004) as meter:
        r = window_around(meter, breaker, "VDD_IN", errors=40)
    assert not r.valid
    assert r.invalid_reason is not None
    assert r.invalid_reason.startswith("total rail VDD_IN: too many read errors: ")
    assert r.total.energy_j is None
    assert_exact(r, ["VDD_CPU", "POM_5V_GPU", "VDD_GPU"])


@pytest.mark.parametrize("failing", FAILING)
def test_a_rail_that_fails_briefly_stays_valid_and_bridges_the_gap(
    tmp_path: Path, kind: str, failing: str
) -> None:
    rails = make_tree(tmp_path, total="VDD_IN")
    breaker = Breaker(rails, failing, kind)
    with Meter(breaker.source(rails), interval_s=0.004) as meter:
        w = meter.begin("brief")
        assert meter.sampler.wait_for_samples(w.begin_index + 20, WAIT_S)
        breaker.breaks()
        wait_until(lambda: failing in meter.sampler.channel_errors(), f"{failing} failing")
        breaker.repair()

        def good_after() -> bool:  # ten good readings of the rail per failed one
            failed = sum(meter.sampler.channel_errors()[failing].values())
            return meter.sampler.count - w.begin_index >= 11 * failed + 20

        wait_until(good_after, "good readings after the repair")
        r = w.end()

    rail = r.rails[failing]
    assert rail.read_errors and set(rail.read_errors) == {breaker.reason}
    assert rail.valid, rail.invalid_reason
    assert rail.samples is not None and rail.samples < r.samples
    # Constant power: the line over the gap is exact.
    assert rail.energy_j == pytest.approx(POWER_W[failing] * r.duration_s, rel=1e-9)
    assert r.valid and r.invalid_rails == {}


def test_summary_and_report_say_which_rail_failed_and_how_often(tmp_path: Path) -> None:
    rails = make_tree(tmp_path, total="VDD_IN")
    breaker = Breaker(rails, "VDD_GPU", "garbage")
    with Meter(breaker.source(rails), interval_s=0.004) as meter:
        breaker.breaks()
        windows = []
        for _ in range(2):
            w = meter.begin("w")
            assert meter.sampler.wait_for_samples(w.begin_index + 8, WAIT_S)
            windows.append(w.end())
    failed = [w.rails["VDD_GPU"].read_errors or {} for w in windows]
    assert all(f.get("garbage") == w.reads for f, w in zip(failed, windows, strict=True))

    text = validity_text(windows[0])
    assert text.startswith("yes (rail VDD_GPU INVALID: too many read errors: ")
    assert f"{windows[0].reads} of {windows[0].reads} reads failed (garbage: " in text
    lines = window_text(windows[0]).splitlines()
    assert any(ln.split()[:2] == ["VDD_GPU", "-"] and "INVALID" in ln for ln in lines)
    assert not any(ln.startswith("INVALID") for ln in lines)

    metrics = window_metrics(windows)
    assert metrics["energy_j"]["value"] is not None
    assert metrics["energy_j.VDD_IN"]["value"] is not None
    assert metrics["energy_j.VDD_GPU"]["value"] is None
    assert metrics["energy_j.VDD_GPU"]["samples"] == []
    validity = validity_of(windows)
    assert validity["valid"] is True and validity["reason"] is None
    reads = sum(w.reads for w in windows)
    assert validity.get("invalid_rails") == {
        "VDD_GPU": f"invalid in 2 of 2 windows; {reads} of {reads} reads failed (garbage: {reads})"
    }
    one = windows[0].reads
    assert validity_of(windows[:1]).get("invalid_rails") == {
        "VDD_GPU": f"invalid in 1 of 1 window; {one} of {one} reads failed (garbage: {one})"
    }
    validate(validity, "validity")


def test_validity_text_adds_rails_not_named_by_an_invalid_total(tmp_path: Path) -> None:
    rails = make_tree(tmp_path, total=None)
    breaker = Breaker(rails, "VDD_CPU", "garbage")
    breaker.breaks()  # before the first reading
    with Meter(breaker.source(rails), interval_s=0.004) as meter:
        w = meter.begin("w")
        assert meter.sampler.wait_for_samples(w.begin_index + 8, WAIT_S)
        r = w.end()
    text = validity_text(r)
    assert text == f"INVALID: {r.invalid_reason}"
    assert text.count("VDD_CPU") == 1
    # The rail was never read: no estimate of a sum without it either.
    assert r.rails["VDD_CPU"].samples == 0
    assert r.total.energy_j_estimate is None and r.total.mean_w_estimate is None


@pytest.fixture
def slow_meter(tmp_path: Path) -> Iterator[tuple[Meter, RailMap]]:
    """A meter whose sampler reads once at start, then not for 60 s."""
    rails = make_tree(tmp_path, total="VDD_IN")
    with Meter(InaSource(rails), interval_s=60.0) as meter:
        yield meter, rails


def test_edges_are_read_at_begin_and_end_not_waited_for(
    slow_meter: tuple[Meter, RailMap],
) -> None:
    meter, rails = slow_meter
    w = meter.begin("edges")
    assert w.begin_edge is not None and w.begin_edge.t == w.start_s
    write_in_place(value_file(rails, "VDD_IN"), "5000\n")  # 10 W -> 25 W
    r = w.end()
    # The sampler took no sample after its first: end() did not wait for one, and both
    # edges came from reading the files then.
    last = meter.sampler.last_time
    assert last is not None and last < r.start_s
    assert r.edge_readings == 2 and r.samples == 2 and r.reads == 2
    total = r.rails["VDD_IN"]
    assert total.peak_w == pytest.approx(25.0)
    assert total.energy_j_estimate == pytest.approx(17.5 * r.duration_s, rel=1e-9)
    assert r.rails["VDD_GPU"].energy_j_estimate == pytest.approx(5.5 * r.duration_s, rel=1e-9)
    assert not r.valid  # 2 readings and shorter than 3 sampling intervals
    assert r.invalid_reason is not None and "too few samples: 2 < min_samples 5" in (
        r.invalid_reason
    )


def test_closing_a_slow_meter_ends_its_sampler_thread(tmp_path: Path) -> None:
    """A sampler stopped while it waits out a long interval sleeps no more: its thread
    had slept the rest of the 60 s after stop() gave up joining it (5 s), left running
    in the process (and making it unsafe to fork)."""
    rails = make_tree(tmp_path, total="VDD_IN")
    with Meter(InaSource(rails), interval_s=60.0) as meter:
        meter.begin("w").end()
        thread = meter.sampler._thread
    assert thread is not None and not thread.is_alive()


def test_a_failed_edge_read_counts_for_its_rail_only(tmp_path: Path) -> None:
    rails = make_tree(tmp_path, total="VDD_IN")
    failing = {"on": False}
    pread = eio_on(value_file(rails, "POM_5V_GPU"), failing)
    with Meter(InaSource(rails, pread=pread), interval_s=60.0) as meter:
        w = meter.begin("edge")
        failing["on"] = True
        r = w.end()
    assert r.reads == 2
    assert r.rails["POM_5V_GPU"].read_errors == {"EIO": 1}
    assert r.rails["POM_5V_GPU"].samples == 1
    assert r.rails["VDD_IN"].samples == 2 and r.rails["VDD_IN"].read_errors == {}
    assert r.read_errors == {"EIO": 1}
    # Its value at the end is held from the last reading (the begin edge).
    assert r.rails["POM_5V_GPU"].energy_j_estimate == pytest.approx(1.234 * r.duration_s, rel=1e-9)


def test_no_edge_reading_after_the_source_is_closed(tmp_path: Path) -> None:
    rails = make_tree(tmp_path, total="VDD_IN")
    meter = Meter(InaSource(rails), interval_s=0.004)
    w = meter.begin("closing")
    assert meter.sampler.wait_for_samples(w.begin_index + 8, WAIT_S)
    meter.close()
    r = w.end()
    assert r.edge_readings == 1  # the begin edge only: closed descriptors are never read
    assert r.total.energy_j_estimate is not None
    assert not math.isnan(r.total.energy_j_estimate)


@pytest.mark.parametrize(
    ("model", "broken", "seconds"),
    [
        ("orin-nano", "VDD_SOC", "1"),  # INA3221 hwmon, total VDD_IN: issue 10's board
        ("nano", "POM_5V_GPU", "0.5"),  # INA3221 iio, total POM_5V_IN
        ("thor", "VDD_GPU", "0.5"),  # INA3221 hwmon beside the INA238 total VIN
    ],
)
def test_measure_json_on_a_virtual_board_with_a_garbage_rail(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: str, broken: str, seconds: str
) -> None:
    root = create(model, tmp_path / model)
    rails = discover_rails(root)
    # A frozen tree: every rail shows one constant power.
    power_w = dict(zip(rails.names, _static_power_w(rails), strict=True))
    write_in_place(value_file(rails, broken), "garbage\n")
    assert main(["measure", "--root", str(root), "--seconds", seconds, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)

    assert doc["valid"] is True and doc["invalid_reason"] is None
    assert doc["samples"] > 0 and doc["edge_readings"] == 2
    bad = doc["rails"].pop(broken)
    assert bad["valid"] is False and bad["energy_j"] is None and bad["samples"] == 0
    assert bad["read_errors"] == {"garbage": doc["reads"]}
    assert f"{doc['reads']} of {doc['reads']} reads failed (garbage: " in bad["invalid_reason"]
    assert doc["invalid_rails"] == {broken: bad["invalid_reason"]}
    assert doc["read_errors"] == {"garbage": doc["reads"]}
    for name, rail in doc["rails"].items():
        assert rail["valid"] is True and rail["samples"] == doc["samples"], name
        assert rail["energy_j"] == pytest.approx(power_w[name] * doc["seconds"], rel=1e-9)
    assert doc["total"]["method"] == "rail"
    assert doc["total"]["energy_j"] == doc["rails"][rails.total_rail]["energy_j"]


def test_measure_json_on_a_sum_of_rails_board_names_the_garbage_rail(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = create("agx-orin", tmp_path / "agx-orin")
    write_in_place(value_file(discover_rails(root), "VDD_CPU_CV"), "garbage\n")
    assert main(["measure", "--root", str(root), "--seconds", "0.5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is False and doc["total"]["method"] == "sum"
    assert doc["invalid_reason"].startswith("rail VDD_CPU_CV (summed into the total): ")
    assert doc["total"]["energy_j"] is None and doc["total"]["energy_j_estimate"] is None
    assert doc["rails"]["VDD_GPU_SOC"]["valid"] is True
    assert doc["rails"]["VDD_GPU_SOC"]["energy_j"] is not None


def _static_power_w(rails: RailMap) -> list[float]:
    """Each rail's power from its files, read here without the meter."""
    out = []
    for rail in rails.rails:
        if rail.power_file is not None:
            out.append(int(rail.power_file.read_text().split()[0]) * rail.power_scale_w)
        else:
            assert rail.voltage_file is not None and rail.current_file is not None
            mv = int(rail.voltage_file.read_text().split()[0])
            out.append(mv * int(rail.current_file.read_text().split()[0]) * 1e-6)
    return out
