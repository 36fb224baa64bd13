"""A repeat shorter than the minimum window is measured again with more calls, never left
INVALID because the host got faster between the warm-up and the window (issue 19, part 6).

The workloads here are slow in their first calls and fast afterwards, driven by a call
counter (not by the clock): the warm-up sees slow calls, so the calibration plans too few
calls for the windows. Everything runs on a virtual board through the real meter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from pytest_edgeenergy.bench.runner import (
    CALIBRATION_MARGIN,
    MAX_CALLS_PER_REPEAT,
    MAX_EXTENSIONS,
    EdgeBench,
    extend_calls,
)
from pytest_edgeenergy.bench.settings import BenchSettings
from pytest_edgeenergy.run import EnergySession

SETTINGS = BenchSettings(items=1, repeats=2, warmup=2, min_window_s=0.2)
SLOW_S = 0.5
"""A warm-up call's time: longer than the minimum window, so the plan is one call."""
FAST_S = 0.002
"""A measured call's time: a one-call window is far below the minimum window."""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnergySession]:
    es = EnergySession(
        "sim:orin-nano",
        report=tmp_path_factory.mktemp("report") / "r.json",
        interval_s=0.01,
        idle_s=0.3,
    )
    es.open()
    try:
        yield es
    finally:
        es.close()


class FasterAfterWarmup:
    """Sleeps ``SLOW_S`` in its first ``slow_calls`` calls and ``FAST_S`` afterwards."""

    def __init__(self, slow_calls: int) -> None:
        self.slow_calls = slow_calls
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        time.sleep(SLOW_S if self.calls <= self.slow_calls else FAST_S)


def test_extend_calls_scales_from_the_short_repeat() -> None:
    target_s = 0.2 * CALIBRATION_MARGIN
    # 2 calls took 10 ms: 5 ms each, so 0.24 s needs 48 calls
    assert extend_calls(2, 0.01, None, 0.2) == pytest.approx(target_s / 0.005, abs=1)
    # the faster of window time per call and mean latency decides (errs towards longer)
    assert extend_calls(2, 0.01, 0.001, 0.2) == pytest.approx(target_s / 0.001, abs=1)
    # long enough but too few samples (a late sampler): at least twice the calls
    assert extend_calls(100, 1.0, 0.01, 0.2) == 200
    assert extend_calls(4, 0.0, None, 1.0) == MAX_CALLS_PER_REPEAT  # capped, no division by 0
    assert extend_calls(MAX_CALLS_PER_REPEAT, 0.1, None, 1.0) == MAX_CALLS_PER_REPEAT


def test_a_repeat_faster_than_the_warmup_is_extended_and_valid(session: EnergySession) -> None:
    bench = EdgeBench(session, "t::faster", SETTINGS)
    fn = FasterAfterWarmup(slow_calls=SETTINGS.warmup)
    r = bench.run(fn, items_per_call=3)

    assert r.valid, r.invalid_reason  # the old engine left it INVALID: too few samples
    assert r.calibration is None or "calls per repeat" in r.calibration
    assert 1 <= len(r.extensions) <= MAX_EXTENSIONS
    first = r.extensions[0]
    assert (first.repeat, first.calls, first.repeats_measured) == (1, 1, 1)  # stopped at once
    assert "min_samples" in first.reason or "minimum" in first.reason
    assert r.calls_per_repeat == r.extensions[-1].calls_after > 1
    assert r.calibration is not None and "measured again with" in r.calibration
    # every kept repeat did the same, larger work
    assert [rep.calls for rep in r.repeats] == [r.calls_per_repeat] * 2
    # per-item figures divide by the work actually done in each kept window
    for rep, per_item in zip(r.repeats, r.metrics()["energy_per_item"]["samples"], strict=True):
        assert rep.items == 3 * rep.calls
        assert rep.energy_j is not None and per_item == pytest.approx(rep.energy_j / rep.items)
    # every call is accounted for: warm-up, the dropped attempts, the kept repeats
    dropped = sum(e.calls * e.repeats_measured for e in r.extensions)
    assert fn.calls == 2 + dropped + 2 * r.calls_per_repeat
    extra = r.extra()
    assert extra["extensions"][0]["calls"] == 1 and extra["extensions"][0]["repeat"] == 1
    assert r.shape()["extensions"] == len(r.extensions)
    # the windows of a new attempt say so; the dropped ones stay attributed to the test
    labels = [w.label for w in session.record("t::faster").windows]
    assert labels[0] == "steady 1/2" and labels[-1].startswith("steady 2/2 (extended ")


def test_setup_runs_before_every_window_of_every_attempt(session: EnergySession) -> None:
    bench = EdgeBench(session, "t::setup", SETTINGS)
    fn = FasterAfterWarmup(slow_calls=SETTINGS.warmup)
    setups = 0

    def setup() -> None:
        nonlocal setups
        setups += 1

    r = bench.run(fn, items_per_call=1, setup=setup)
    assert r.valid, r.invalid_reason
    assert r.extensions
    windows = sum(e.repeats_measured for e in r.extensions) + len(r.repeats)
    assert setups == 1 + windows  # before the warm-up, then before each window


def test_calibrate_false_keeps_the_short_window_invalid(session: EnergySession) -> None:
    bench = EdgeBench(session, "t::fixed", SETTINGS)
    fn = FasterAfterWarmup(slow_calls=SETTINGS.warmup)
    r = bench.run(fn, items_per_call=1, calibrate=False)
    assert not r.valid and r.extensions == []
    assert r.calls_per_repeat == 1 and fn.calls == 2 + 2


def test_extension_without_warmup(session: EnergySession) -> None:
    """No warm-up: nothing to calibrate from, so the first windows are what is learnt from."""
    bench = EdgeBench(session, "t::nowarm", SETTINGS)
    r = bench.run(lambda: time.sleep(FAST_S), items_per_call=1, warmup=0)
    assert r.valid, r.invalid_reason
    assert r.extensions and r.extensions[0].calls == 1


INNER = """
import json
import time

calls = {"n": 0}


def work():
    calls["n"] += 1
    time.sleep(0.5 if calls["n"] <= 2 else 0.002)


def test_edge_bench(edge_bench):
    r = edge_bench.run(work, items_per_call=1, items=1, repeats=2, warmup=2)
    print("EDGE-RUN " + json.dumps({"extensions": len(r.extensions)}))


def test_edge_bench_drives_benchmark(benchmark, edge_bench):
    calls["n"] = 0
    r = edge_bench.run(work, items_per_call=1, items=1, repeats=2, warmup=2)
    print("EDGE-DRIVEN " + json.dumps({"extensions": len(r.extensions)}))
"""


def test_the_report_records_the_extension(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        "--edge-idle-s=0.2",
        "--edge-min-window-s=0.2",
        f"--edge-report={report}",
        "-s",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        timeout=300,
    )
    result.assert_outcomes(passed=2)
    entries = {t["name"]: t for t in json.loads(report.read_text())["tests"]}
    for name in ("test_edge_bench", "test_edge_bench_drives_benchmark"):
        entry = entries[name]
        assert entry["status"] == "passed" and entry["validity"]["valid"], entry["validity"]
        [run] = entry["extra"]["runs"]
        assert run["extensions"] and run["extensions"][0]["calls"] == 1
        assert "measured again with" in run["calibration"]
        assert [rep["calls"] for rep in run["repeats"]] == [run["calls_per_repeat"]] * 2
        assert entry["metrics"]["energy_per_item"]["value"] is not None
    # pedantic's rounds cannot be measured again: the note says what pytest-benchmark timed
    driven = entries["test_edge_bench_drives_benchmark"]["extra"]["runs"][0]
    assert "pytest-benchmark timed the first attempt only" in driven["calibration"]
    assert driven["extensions"][0]["repeats_measured"] == 2  # all of pedantic's rounds ran
