"""pytest-benchmark's ``benchmark`` beside ``energy`` and ``edge_bench``: energy figures in
its ``extra_info`` and JSON, and ``edge_bench.run`` driving an unused ``benchmark``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_edgeenergy.bench.extra_info import (
    fill,
    flat_figures,
    flat_key,
    unused,
)
from pytest_edgeenergy.report.model import build_validity, make_metric

RUN_TIMEOUT_S = 180.0
NOT_USED = "*Benchmark fixture was not used*"


@pytest.mark.parametrize(
    ("name", "unit", "key"),
    [
        ("energy_j", "J", "energy_j"),
        ("energy_net_j", "J", "energy_net_j"),
        ("energy_per_item", "J/item", "energy_per_item_j"),
        ("power_mean", "W", "power_mean_w"),
        ("duration_s", "s", "duration_s"),
        ("latency_p90", "s", "latency_p90_s"),
        ("throughput", "items/s", "throughput_items_s"),
        ("edp", "J·s", "edp_js"),
        ("memory_peak", "B", "memory_peak_bytes"),
        ("energy_j.VDD_IN", "J", "energy_j.VDD_IN"),
        ("load.energy_j.VDD_CPU_GPU_CV", "J", "load.energy_j.VDD_CPU_GPU_CV"),
        ("bs4.latency_p90", "s", "bs4.latency_p90_s"),
        ("load.duration_s", "s", "load.duration_s"),
        # a label ending like a unit does not count as the metric's unit
        ("warm_s.latency_p50", "s", "warm_s.latency_p50_s"),
        ("temp", "°C", "temp_c"),
        ("share", "%", "share"),
    ],
)
def test_flat_key_puts_the_unit_in_the_name(name: str, unit: str, key: str) -> None:
    assert flat_key(name, unit) == key


def test_flat_figures_take_each_metrics_value_and_the_validity() -> None:
    metrics = {
        "energy_j": make_metric("energy_j", [2.0, 4.0]),
        "power_peak": {**make_metric("power_peak", [9.0]), "value": None},  # untrusted
        "bs4.latency_p90": make_metric("latency_p90", [0.5]),
    }
    invalid = build_validity(samples=3, valid=False, reason="w: too few samples")
    info = flat_figures(metrics, invalid, simulated=True)
    assert info == {
        "energy_j": 3.0,
        "power_peak_w": None,
        "bs4.latency_p90_s": 0.5,
        "energy_valid": False,
        "energy_invalid_reason": "w: too few samples",
        "energy_simulated": True,
    }
    assert flat_figures({}, None, simulated=False)["energy_valid"] is None


def test_fill_updates_the_same_dict_and_ignores_other_objects() -> None:
    class Bench:
        def __init__(self) -> None:
            self.extra_info: dict[str, Any] = {"mine": 1}

    bench = Bench()
    held = bench.extra_info  # pytest-benchmark's stats hold this very dict
    fill(bench, {"energy_j": 2.0})
    assert held == {"mine": 1, "energy_j": 2.0}
    fill(object(), {"energy_j": 2.0})  # no extra_info: nothing to do, no error


def test_a_fixture_without_pytest_benchmarks_use_flag_counts_as_used() -> None:
    assert not unused(object())  # edge_bench then runs its own loop

    class Fresh:
        _mode = None

    assert unused(Fresh())


INNER = """
import hashlib
import json
import time

DATA = b"x" * 512
calls = {"n": 0}


def work():
    calls["n"] += 1
    return hashlib.sha256(DATA).digest()


def emit(tag, value):
    print(f"EDGE-{tag} " + json.dumps(value))


def test_energy_and_pedantic(benchmark, energy):
    with energy.window("work"):
        benchmark.pedantic(lambda: time.sleep(0.1), rounds=4)
    with energy.window("post"):
        time.sleep(0.3)


def test_edge_bench_drives(benchmark, edge_bench):
    r = edge_bench.run(work, items_per_call=2, repeats=3, warmup=2)
    emit("DRIVES", {
        "calls": calls["n"],
        "calls_per_repeat": r.calls_per_repeat,
        "latency_mean_s": [rep.latency.mean_s for rep in r.repeats],
        "repeat_calls": [rep.calls for rep in r.repeats],
        "extra_info_in_test": benchmark.extra_info.get("energy_per_item_j"),
        "energy_per_item": r.value("energy_per_item"),
    })


def test_edge_bench_after_pedantic(benchmark, edge_bench):
    benchmark.pedantic(work, rounds=3)
    calls["n"] = 0
    r = edge_bench.run(work, items_per_call=2, repeats=2, warmup=1)
    emit("AFTER", {"calls": calls["n"], "calls_per_repeat": r.calls_per_repeat})
"""


def _lines(result: pytest.RunResult, tag: str) -> dict[str, Any]:
    found = [ln for ln in result.outlines if f"EDGE-{tag} " in ln]  # after a progress dot
    assert len(found) == 1, result.stdout.str()
    value: dict[str, Any] = json.loads(found[0].split(f"EDGE-{tag} ", 1)[1])
    return value


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=INNER)
    return pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        "--edge-idle-s=0.2",
        "--edge-min-window-s=0.3",
        "-s",
        "-p",
        "no:cacheprovider",
        *args,
        timeout=RUN_TIMEOUT_S,
    )


def test_energy_figures_reach_pytest_benchmarks_json(pytester: pytest.Pytester) -> None:
    bm_json, edge_json = pytester.path / "bm.json", pytester.path / "edge.json"
    result = _run(pytester, f"--benchmark-json={bm_json}", f"--edge-report={edge_json}")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line(NOT_USED)
    benchmarks = {b["name"]: b for b in json.loads(bm_json.read_text())["benchmarks"]}
    assert set(benchmarks) == {
        "test_energy_and_pedantic",
        "test_edge_bench_drives",
        "test_edge_bench_after_pedantic",
    }

    # energy + benchmark.pedantic: the energy windows' figures, the first label plain
    extra = benchmarks["test_energy_and_pedantic"]["extra_info"]
    assert {"energy_j", "energy_net_j", "power_mean_w", "power_peak_w", "duration_s"} <= set(extra)
    assert {"post.energy_j", "post.duration_s", "energy_j.VDD_IN"} <= set(extra)
    assert extra["energy_valid"] is True and extra["energy_simulated"] is True
    assert extra["energy_j"] > 0 and extra["post.energy_j"] > 0

    # edge_bench + unused benchmark: one pedantic round per repeat, iterations = calls
    drives = _lines(result, "DRIVES")
    stats = benchmarks["test_edge_bench_drives"]["stats"]
    assert stats["rounds"] == 3 and len(stats["data"]) == 3
    assert stats["iterations"] == drives["calls_per_repeat"]
    assert drives["repeat_calls"] == [drives["calls_per_repeat"]] * 3
    # warm-up, the repeats, and pytest-benchmark's one extra call for the return value
    assert drives["calls"] == 2 + 3 * drives["calls_per_repeat"] + 1
    # a round's time encloses each of its calls' timed spans
    for per_call_s, latency_s in zip(stats["data"], drives["latency_mean_s"], strict=True):
        assert per_call_s >= latency_s
    extra = benchmarks["test_edge_bench_drives"]["extra_info"]
    assert extra["energy_per_item_j"] == drives["energy_per_item"] == drives["extra_info_in_test"]
    assert extra["items_per_call"] == 2 and extra["repeats"] == 3
    assert {"latency_p90_s", "throughput_items_s", "edp_js", "memory_peak_bytes"} <= set(extra)

    # the user's own pedantic stays pytest-benchmark's measurement; edge_bench loops alone
    after = _lines(result, "AFTER")
    assert benchmarks["test_edge_bench_after_pedantic"]["stats"]["rounds"] == 3
    assert after["calls"] == 1 + 2 * after["calls_per_repeat"]
    assert "energy_per_item_j" in benchmarks["test_edge_bench_after_pedantic"]["extra_info"]

    # one source of truth: every metric of the edgeenergy report, under its flat key
    entries = {t["name"]: t for t in json.loads(edge_json.read_text())["tests"]}
    for name, bench in benchmarks.items():
        metrics = entries[name]["metrics"]
        assert metrics
        for metric, m in metrics.items():
            assert bench["extra_info"][flat_key(metric, m["unit"])] == m["value"], metric
        assert bench["extra_info"]["energy_valid"] is entries[name]["validity"]["valid"]


def test_benchmark_disable_still_measures_energy(pytester: pytest.Pytester) -> None:
    bm_json, edge_json = pytester.path / "bm.json", pytester.path / "edge.json"
    result = _run(
        pytester,
        "--benchmark-disable",
        f"--benchmark-json={bm_json}",
        f"--edge-report={edge_json}",
        "-k",
        "drives",
    )
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.no_fnmatch_line(NOT_USED)
    drives = _lines(result, "DRIVES")
    # pytest-benchmark ran its target once: edge_bench's own loop, no extra call
    assert drives["calls"] == 2 + 3 * drives["calls_per_repeat"]
    assert not bm_json.exists()  # pytest-benchmark saves nothing when disabled
    (entry,) = json.loads(edge_json.read_text())["tests"]
    assert entry["status"] == "passed" and entry["metrics"]["energy_per_item"]["value"] > 0


def test_benchmark_skip_skips_the_energy_tests_too(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--benchmark-skip")
    result.assert_outcomes(skipped=3)
    assert not any("EDGE-" in ln for ln in result.outlines)
