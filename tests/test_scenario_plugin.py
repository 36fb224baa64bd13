"""``--edge-scenario`` end to end on a virtual Orin Nano whose utilisation is pinned
(``--edge-sim-load``), so its power does not depend on this machine's load: fixed-rate
energy accounting, deadline misses, single-stream and server runs, the search's use of a
scenario, and bad input refused naming the option."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.plugin.options import SettingsError, build_bench

RATE = 4.0
"""Periods of 250 ms: a 10 ms query misses one only when this machine wakes it 240 ms late, later
than any wake-up seen with four CPU-bound processes beside the tests on 2 cores (0.22 s)."""
SEARCH_RATE = 2.0
"""A 500 ms deadline: missed by every query at 306 MHz (523 ms of work), met at 612 MHz with
0.24 s to spare."""
BASE = (
    "--edge-board=sim:orin-nano",
    "--edge-idle-s=0",
    "--edge-sim-load=0.4",
    "--edge-warmup=1",
    "--edge-repeats=2",
    "-p",
    "no:cacheprovider",
)

# The same work (a 10 ms query) on the CLI's scenario and, for comparison, offline.
FIXED_VS_OFFLINE = """
import time

from pytest_edgeenergy.bench.scenarios import OFFLINE


def test_stream(edge_bench):
    work = lambda: time.sleep(0.01)
    edge_bench.run(work, items_per_call=2, params={"workload": "sleep"})
    edge_bench.run(work, items_per_call=2, label="offline", scenario=OFFLINE)
"""

SLOW = """
import time


def test_slow(edge_bench):
    edge_bench.run(lambda: time.sleep(1.5 / {rate}), items_per_call=1)
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def _run(pytester: pytest.Pytester, source: str, *args: str) -> dict[str, Any]:
    pytester.makepyfile(test_inner=source)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(*BASE, f"--edge-report={report}", *args, timeout=240)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    data = json.loads(report.read_text())
    (entry,) = [t for t in data["tests"] if t["metrics"]]
    return entry  # type: ignore[no-any-return]


def _value(entry: dict[str, Any], name: str) -> float:
    value = entry["metrics"][name]["value"]
    assert value is not None, name
    return float(value)


def test_fixed_rate_energy_per_item_includes_the_idle_gaps(pytester: pytest.Pytester) -> None:
    entry = _run(
        pytester,
        FIXED_VS_OFFLINE,
        "--edge-scenario=fixed-rate",
        f"--edge-rate={RATE:g}",
        "--edge-items=16",
    )
    assert entry["params"]["scenario"] == "fixed-rate"
    assert entry["params"]["rate_hz"] == RATE and "latency_bound_s" not in entry["params"]
    run, offline = entry["extra"]["runs"]
    queries = run["calls_per_repeat"]  # 8 (16 items, 2 per call), more if calibrated
    assert queries >= 8 and run["items_per_repeat"] == 2 * queries
    for rep in run["repeats"]:
        # The window covers the whole schedule: at least N periods.
        assert rep["seconds"] >= 0.98 * queries / RATE
        assert rep["schedule"]["span_s"] >= queries / RATE - 1e-6
        assert rep["schedule"]["deadline_misses"] == 0 and rep["schedule"]["deadline_met"]
        assert rep["schedule"]["deadline_s"] == 1 / RATE  # the period
    power_w = _value(entry, "power_mean")
    per_item = _value(entry, "energy_per_item")
    # Energy per item = mean power x window / items, the window about N / rate:
    # the idle half of each period is paid for.
    duration_s = _value(entry, "duration_s")
    assert per_item == pytest.approx(power_w * duration_s / (2 * queries), rel=0.02)
    assert per_item >= 0.98 * power_w / (2 * RATE)
    assert _value(entry, "deadline_misses") == 0 and _value(entry, "deadline_miss_fraction") == 0
    assert _value(entry, "idle_fraction") > 0.5  # 10 ms of work in 100 ms periods
    # The same work offline costs far less per item: no idle time between calls.
    offline_per_item = _value(entry, "offline.energy_per_item")
    assert per_item > 2.5 * offline_per_item
    assert "offline.deadline_misses" not in entry["metrics"]
    assert "schedule" not in offline["repeats"][0] and "scenario" not in offline
    assert run["scenario"]["deadline_met"] is True and run["scenario"]["deadline_s"] == 1 / RATE


def test_a_workload_slower_than_the_period_misses_every_deadline(
    pytester: pytest.Pytester,
) -> None:
    entry = _run(
        pytester,
        SLOW.replace("{rate}", repr(RATE)),
        "--edge-scenario=fixed-rate",
        f"--edge-rate={RATE:g}",
        "--edge-items=6",
        "--edge-min-window-s=0",
    )
    (run,) = entry["extra"]["runs"]
    assert run["calls_per_repeat"] == 6
    assert run["scenario"]["deadline_met"] is False
    assert run["scenario"]["deadline_misses"] == [6, 6]
    for rep in run["repeats"]:
        assert rep["schedule"]["deadline_misses"] == 6 and rep["schedule"]["deadline_met"] is False
        # The window runs to the last completion, past the last period's end.
        assert rep["schedule"]["span_s"] >= 6 * 1.5 / RATE
    assert _value(entry, "deadline_misses") == 6 and _value(entry, "deadline_miss_fraction") == 1
    # Queueing is part of the latency: the p99 query waited behind the others.
    assert _value(entry, "latency_p99") > _value(entry, "latency_p50") > 1.5 / RATE


def test_single_stream_latency_percentiles(pytester: pytest.Pytester) -> None:
    source = """
import time

def test_one(edge_bench):
    edge_bench.run(lambda: time.sleep(0.004), items_per_call=1)
"""
    entry = _run(
        pytester,
        source,
        "--edge-scenario=single-stream",
        "--edge-latency-bound-s=0.002",
        "--edge-items=12",
    )
    assert entry["params"]["scenario"] == "single-stream"
    assert entry["params"]["latency_bound_s"] == 0.002 and "rate_hz" not in entry["params"]
    p50, p90, p99 = (_value(entry, f"latency_p{q}") for q in (50, 90, 99))
    assert 0.004 <= p50 <= p90 <= p99
    # Every 4 ms query is over the 2 ms bound.
    assert _value(entry, "deadline_miss_fraction") == 1


def test_server_records_rate_bound_and_misses(pytester: pytest.Pytester) -> None:
    source = """
import time

def test_srv(edge_bench):
    edge_bench.run(lambda: time.sleep(0.002), items_per_call=1)
"""
    entry = _run(
        pytester,
        source,
        "--edge-scenario=server",
        "--edge-rate=40",
        "--edge-latency-bound-s=0.5",
        "--edge-items=10",
    )
    assert entry["params"]["scenario"] == "server"
    assert (entry["params"]["rate_hz"], entry["params"]["latency_bound_s"]) == (40.0, 0.5)
    assert _value(entry, "deadline_misses") == 0  # 2 ms queries, 0.5 s bound
    (run,) = entry["extra"]["runs"]
    assert run["scenario"]["deadline_met"] is True and run["scenario"]["seed"] == 0
    assert 0 < _value(entry, "idle_fraction") < 1
    assert entry["metrics"]["latency_p99"]["value"] >= 0.002


SEARCHED = """
import time


def test_paced(operating_point, edge_bench):
    # Slower at lower GPU clocks: 523 ms at 306 MHz, 261 ms at 612 MHz, 157 ms at 1020 MHz.
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    edge_bench.run(lambda: time.sleep(0.16 * 1e9 / gpu_hz), items_per_call=1)
"""


def test_search_takes_the_deadline_as_its_latency_budget(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=SEARCHED)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *BASE,
        "--edge-quick",
        "--edge-search=grid",
        "--gpu-freq=306MHz,612MHz,1020MHz",
        "--edge-trials=3",
        "--edge-scenario=fixed-rate",
        f"--edge-rate={SEARCH_RATE:g}",
        f"--edge-report={report}",
        timeout=240,
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "*objective min-energy, scenario fixed-rate with every query's latency <= 0.5 s*",
            "*gpu_freq=306MHz*infeasible: * queries over the 0.5 s deadline (allowed: 1%)*",
        ]
    )
    (search,) = json.loads(report.read_text())["search"]
    by_gpu = {t["knobs"]["gpu_freq_hz"]: t for t in search["trials"]}
    assert set(by_gpu) == {306_000_000, 612_000_000, 1_020_000_000}
    # 523 ms queries at 306 MHz miss the 500 ms deadline: infeasible, whatever its energy.
    assert "over the 0.5 s deadline" in by_gpu[306_000_000]["infeasible"]
    assert not by_gpu[306_000_000]["feasible"]
    feasible = [t for t in search["trials"] if t["feasible"]]
    assert {t["knobs"]["gpu_freq_hz"] for t in feasible} == {612_000_000, 1_020_000_000}
    # The objective is the scenario's energy per item (idle gaps included): about P / rate.
    best = search["best"]
    assert best["energy_j"] == min(t["energy_j"] for t in feasible)
    assert best["time_s"] >= 1 / SEARCH_RATE and best["energy_j"] == pytest.approx(
        best["power_w"] * best["time_s"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--edge-scenario=batch"],
            "--edge-scenario (command line): unknown scenario 'batch'; "
            "allowed: offline, single-stream, fixed-rate, server",
        ),
        (
            ["--edge-scenario=fixed-rate"],
            "--edge-scenario (command line): fixed-rate needs --edge-rate",
        ),
        (
            ["--edge-scenario=fixed-rate", "--edge-rate=0"],
            "--edge-rate (command line): '0' must be >= 0.01 and <= 100000 queries per second",
        ),
        (["--edge-scenario=server", "--edge-rate=-3"], "--edge-rate (command line): '-3' must"),
        (["--edge-scenario=server", "--edge-rate=5"], "server needs --edge-latency-bound-s"),
        (
            ["--edge-rate=30"],
            "--edge-rate (command line): a rate applies to the fixed-rate and "
            "server scenarios only",
        ),
        (["--edge-scenario=fixed-rate", "--edge-rate=fast"], "'fast' is not a number"),
    ],
)
def test_bad_scenario_options_name_the_option(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    with pytest.raises(SettingsError) as info:
        build_bench(pytester.parseconfig(*args))
    assert message in str(info.value)


def test_bad_scenario_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    monkeypatch.setenv("EDGEENERGY_SCENARIO", "fixed-rate")
    result = pytester.runpytest_subprocess("--edge-board=sim:orin-nano")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*EDGEENERGY_SCENARIO (environment): fixed-rate needs --edge-rate*"]
    )


def test_ini_scenario_and_cli_precedence(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nedge_scenario = server\nedge_rate = 8\nedge_latency_bound_s = 0.2\n"
    )
    s = build_bench(pytester.parseconfig()).scenario
    assert (s.name, s.rate_hz, s.latency_bound_s) == ("server", 8.0, 0.2)
    s = build_bench(pytester.parseconfig("--edge-scenario=fixed-rate", "--edge-rate=30")).scenario
    assert (s.name, s.rate_hz, s.deadline_s) == ("fixed-rate", 30.0, 0.2)


def test_the_stream_suite_runs_fixed_rate_in_the_quick_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    pytest.importorskip("torch", reason="the suites need torch")
    pytest.importorskip("torchvision", reason="the stream suite needs torchvision")
    import subprocess
    import sys

    suite = Path(__file__).resolve().parents[1] / "suites" / "test_stream.py"
    folder = tmp_path_factory.mktemp("stream")
    report = folder / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), *BASE[:2], "--edge-quick",
         f"--edge-report={report}", "-p", "no:cacheprovider"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (entry,) = [t for t in json.loads(report.read_text())["tests"] if t["status"] == "passed"]
    params = entry["params"]
    assert (params["workload"], params["batch_size"], params["scenario"]) == (
        "mobilenet_v2",
        1,
        "fixed-rate",
    )
    assert params["rate_hz"] == 30.0
    (run,) = entry["extra"]["runs"]
    assert run["scenario"]["deadline_s"] == pytest.approx(1 / 30)
    queries = run["calls_per_repeat"]
    for rep in run["repeats"]:
        assert rep["schedule"]["queries"] == queries and rep["seconds"] >= 0.98 * queries / 30
    m = entry["metrics"]
    misses = m["deadline_misses"]["value"]
    assert misses is not None and 0 <= misses <= queries  # counted, whatever this CPU manages
    assert m["energy_per_item"]["value"] > 0 and "load.energy_j" in m


def test_with_pytest_benchmark_the_schedule_runs_once_and_fills_extra_info(
    pytester: pytest.Pytester,
) -> None:
    source = """
import time

def test_b(benchmark, edge_bench):
    result = edge_bench.run(lambda: time.sleep(0.002), items_per_call=1)
    assert all(r.schedule is not None for r in result.repeats)
    info = benchmark.extra_info
    assert info["deadline_misses_queries"] == 0 and 0 < info["idle_fraction"] < 1
    assert info["deadline_miss_fraction"] == 0
"""
    pytester.makepyfile(test_inner=source)
    saved = pytester.path / "bench.json"
    result = pytester.runpytest_subprocess(
        *BASE, "--edge-scenario=fixed-rate", f"--edge-rate={RATE:g}", "--edge-items=4",
        f"--benchmark-json={saved}", timeout=240,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    (bench,) = json.loads(saved.read_text())["benchmarks"]
    assert bench["stats"]["rounds"] == 1  # the whole measured loop, not per-call rounds
    assert bench["extra_info"]["deadline_misses_queries"] == 0
