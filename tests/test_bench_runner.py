"""EdgeBench on a real energy session over a virtual board (no mocks of the meter)."""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_edgeenergy.bench.runner import MAX_CALLS_PER_REPEAT, EdgeBench, plan_calls
from pytest_edgeenergy.plugin.bench_options import BenchSettings
from pytest_edgeenergy.plugin.options import Settings
from pytest_edgeenergy.plugin.session import PluginSession
from pytest_edgeenergy.present.bench_summary import summary_rows

SETTINGS = BenchSettings(items=8, repeats=2, warmup=2, min_window_s=0.1)
DATA = b"x" * 256


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginSession]:
    es = PluginSession(
        Settings(
            sim_model="orin-nano",
            root=None,
            interval_s=0.01,
            source="auto",
            report=tmp_path_factory.mktemp("report") / "r.json",  # never the repo's reports/
            idle_s=0.3,
            requested=True,
        )
    )
    es.open()
    try:
        yield es
    finally:
        es.close()


@pytest.fixture
def bench(session: PluginSession, request: pytest.FixtureRequest) -> EdgeBench:
    return EdgeBench(session, request.node.nodeid, SETTINGS)


def sha() -> bytes:
    return hashlib.sha256(DATA).digest()


class Counter:
    def __init__(self, sleep_s: float = 0.0) -> None:
        self.calls = 0
        self.sleep_s = sleep_s
        self.gc_states: list[bool] = []

    def __call__(self) -> None:
        self.calls += 1
        self.gc_states.append(gc.isenabled())
        if self.sleep_s:
            time.sleep(self.sleep_s)


def test_plan_calls() -> None:
    assert plan_calls(4, [], 1.0) == (4, None)  # no warm-up: no calibration
    assert plan_calls(4, [0.5, 0.5], 1.0) == (4, None)  # 2 s of work already
    calls, why = plan_calls(4, [0.9, 0.01], 1.0)  # fastest warm-up call counts
    assert calls == 120 and why is not None and "minimum window 1 s" in why
    assert plan_calls(4, [0.01], 1.0, calibrate=False) == (4, None)
    assert plan_calls(4, [0.0], 1.0)[0] == MAX_CALLS_PER_REPEAT  # capped, no division by 0


def test_fixed_work_per_repeat(bench: EdgeBench, session: PluginSession) -> None:
    fn = Counter(sleep_s=0.02)  # 4 calls = 80 ms, above the meter's minimum: no calibration
    r = bench.run(fn, items_per_call=3, items=10, repeats=3, min_window_s=0.0)
    assert r.calibration is None
    assert r.items_requested == 10
    assert r.calls_per_repeat == 4  # ceil(10 / 3)
    assert r.items_per_repeat == 12
    assert [rep.calls for rep in r.repeats] == [4, 4, 4]
    assert [len(rep.latencies_s) for rep in r.repeats] == [4, 4, 4]
    assert fn.calls == 2 + 3 * 4  # warm-up + repeats x calls
    labels = [w.label for w in session.record(bench.nodeid).windows]
    assert labels == ["steady 1/3", "steady 2/3", "steady 3/3"]
    assert all(lat >= 0.02 for rep in r.repeats for lat in rep.latencies_s)
    assert bench.results == [r]


def test_calibration_extends_short_repeats(bench: EdgeBench) -> None:
    calls = 0

    def fn() -> None:
        nonlocal calls
        calls += 1
        sha()

    r = bench.run(fn, items_per_call=2, items=4, warmup=3, repeats=2, min_window_s=0.2)
    assert r.calibration is not None and "minimum window 0.2 s" in r.calibration
    assert r.calls_per_repeat > 2
    assert r.items_per_repeat == 2 * r.calls_per_repeat
    assert all(rep.items == r.items_per_repeat for rep in r.repeats)
    # warm-up, any attempt dropped as too short (a tight loop often beats the warm-up's
    # fastest call), then the kept repeats
    dropped = sum(e.calls * e.repeats_measured for e in r.extensions)
    assert calls == 3 + dropped + 2 * r.calls_per_repeat
    assert r.valid, r.invalid_reason
    m = r.metrics()
    assert m["energy_per_item"]["value"] is not None and m["energy_per_item"]["value"] > 0
    assert m["energy_j"]["stats"] is not None and m["energy_j"]["stats"]["n"] == 2
    assert "gpu" in r.residency and abs(sum(r.residency["gpu"].values()) - 1.0) < 1e-9
    assert r.temperature_start_c and r.temperature_end_c
    assert all(v is not None and v > 0 for v in m["memory_peak"]["samples"])
    assert m["memory_board_used"]["value"] is not None


def test_gc_is_disabled_inside_windows_only(bench: EdgeBench) -> None:
    assert gc.isenabled()
    fn = Counter()
    bench.run(fn, items_per_call=1, items=5, warmup=2, repeats=2, calibrate=False)
    assert fn.gc_states[:2] == [True, True]  # warm-up runs with the collector on
    assert fn.gc_states[2:] == [False] * 10
    assert gc.isenabled()


def test_gc_is_restored_after_an_error(bench: EdgeBench) -> None:
    seen = 0

    def fn() -> None:
        nonlocal seen
        seen += 1
        if seen == 4:  # 2 warm-up calls, then fail inside the first window
            raise RuntimeError("workload crashed")

    with pytest.raises(RuntimeError, match="workload crashed"):
        bench.run(fn, items_per_call=1, items=5, warmup=2, calibrate=False)
    assert gc.isenabled()
    assert bench.results == []

    gc.disable()
    try:
        seen = 0
        with pytest.raises(RuntimeError):
            bench.run(fn, items_per_call=1, items=5, warmup=2, calibrate=False)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_invalid_windows_make_the_result_invalid(bench: EdgeBench) -> None:
    # microsecond windows, kept as asked (calibrated runs measure short repeats again)
    r = bench.run(sha, items_per_call=1, items=1, warmup=0, repeats=2, calibrate=False)
    assert not r.valid
    reason = r.invalid_reason
    assert reason is not None and "steady 1/2" in reason
    assert "window too short" in reason or "too few samples" in reason
    m = r.metrics()
    assert m["energy_per_item"]["value"] is None
    assert m["energy_j"]["samples"] == []  # never 0 J
    assert m["latency_p90"]["value"] is not None
    assert summary_rows([r])[1][-1].startswith("INVALID: ")
    assert bench.report()["valid"] is False


def test_setup_runs_before_warmup_and_each_repeat(bench: EdgeBench) -> None:
    events: list[str] = []
    bench.run(
        lambda: events.append("call"),
        setup=lambda: events.append("setup"),
        items_per_call=1,
        items=2,
        warmup=1,
        repeats=2,
        calibrate=False,
    )
    assert events == ["setup", "call", "setup", "call", "call", "setup", "call", "call"]


def test_extra_info_of_a_benchmark_object(session: PluginSession) -> None:
    class FakeBenchmark:
        def __init__(self) -> None:
            self.extra_info: dict[str, object] = {}

    bm = FakeBenchmark()
    b = EdgeBench(session, "t::extra", SETTINGS, benchmark_fixture=bm)
    r = b.run(sha, items_per_call=4, min_window_s=0.1)
    assert bm.extra_info["energy_per_item_j"] == r.value("energy_per_item")
    assert bm.extra_info["energy_valid"] is r.valid
    assert bm.extra_info["items_per_repeat"] == r.items_per_repeat
    b.run(sha, items_per_call=4, label="bs4", min_window_s=0.1)
    assert "bs4.energy_per_item_j" in bm.extra_info
    _, phase = b.phase("load", lambda: time.sleep(0.1))
    assert bm.extra_info["load.energy_j"] == phase.energy_j


def test_phase_measures_one_window(bench: EdgeBench, session: PluginSession) -> None:
    def load() -> str:
        time.sleep(0.15)
        return "model"

    value, p = bench.phase("load", load)
    assert value == "model"
    assert p.label == "load" and bench.phases == [p]
    assert p.elapsed_s >= 0.15
    assert session.record(bench.nodeid).windows[-1] is p.window
    if p.valid:
        assert p.energy_j is not None and p.energy_j > 0
    else:
        assert p.energy_j is None
    assert "load.energy_j" in bench.report()["metrics"]


def test_progress_lines(session: PluginSession) -> None:
    lines: list[str] = []
    b = EdgeBench(session, "t::p", SETTINGS, progress=lines.append, progress_always=True)
    b.run(sha, items_per_call=1, items=3, warmup=0, repeats=3, calibrate=False)
    assert len(lines) == 3
    assert lines[0].startswith("edge_bench t::p [steady] repeat 1/3: 3 items in ")
    quiet: list[str] = []
    b2 = EdgeBench(session, "t::q", SETTINGS, progress=quiet.append)
    b2.run(sha, items_per_call=1, items=3, warmup=0, repeats=2, calibrate=False)
    assert quiet == []  # short run, not verbose


def test_bad_arguments_are_named(bench: EdgeBench) -> None:
    with pytest.raises(ValueError, match="items_per_call must be a whole number >= 1"):
        bench.run(sha, items_per_call=0)
    with pytest.raises(ValueError, match="repeats must be a whole number >= 1"):
        bench.run(sha, items_per_call=1, repeats=0)
    with pytest.raises(ValueError, match="min_window_s"):
        bench.run(sha, items_per_call=1, min_window_s=float("nan"))


def test_preflight_skips_what_will_not_fit(bench: EdgeBench, session: PluginSession) -> None:
    assert session.root is not None
    meminfo: Path = session.root / "proc/meminfo"
    original = meminfo.read_text()
    try:
        verdict = bench.preflight(estimate_bytes=64 * 2**20, what="tiny bs1")
        assert verdict.fits and verdict.checked
        meminfo.write_text("MemTotal: 7800000 kB\nMemFree: 100000 kB\nMemAvailable: 300000 kB\n")
        with pytest.raises(
            pytest.skip.Exception,
            match=r"memory pre-flight: resnet18 bs64: "
            r"needs ~1\.00 GiB, MemAvailable 0\.29 GiB less margin",
        ):
            bench.preflight(estimate_bytes=2**30, what="resnet18 bs64")
    finally:
        meminfo.write_text(original)
    recorded = bench.report()["extra"]["preflight"]
    assert [v["fits"] for v in recorded] == [True, False]
    assert bench.preflights[1].estimate_bytes == 2**30


def test_tiny_torch_workload(bench: EdgeBench) -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(32, 8).eval()
    x = torch.randn(4, 32)

    def infer() -> object:
        with torch.no_grad():
            return model(x)

    r = bench.run(infer, items_per_call=4, params={"workload": "linear", "batch_size": 4})
    assert r.items_per_repeat % 4 == 0
    assert r.report_params()["batch_size"] == 4
    assert r.value("throughput") is not None
