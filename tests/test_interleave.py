"""The interleaved workload (issue 24): schedulers on tiny real steps, their bookkeeping, the
alternating policy's deadline, the energy attribution, and the suite end to end on a
virtual board."""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.errors import EdgeEnergyError
from pytest_edgeenergy.workloads.errors import WorkloadError
from pytest_edgeenergy.workloads.interleave import (
    REFRESH_S,
    Estimates,
    QueryRecord,
    Stream,
    WindowStats,
    build_interleaved,
    busy_time_attribution,
    interleave_extra,
    marginal_attribution,
    run_alternating,
    run_infer_alone,
    run_threads,
    run_train_alone,
)

CONTRACT = (
    "scheduler",
    "train_workload",
    "infer_workload",
    "rate_qps",
    "infer_batch_size",
    "deadline_s",
    "train_minibatches",
    "train_minibatches_per_s",
    "train_items_per_s",
    "queries",
    "latency_p50_s",
    "latency_p90_s",
    "latency_p99_s",
    "deadline_misses",
    "energy_j",
    "energy_train_j",
    "energy_infer_j",
    "energy_other_j",
    "energy_per_train_minibatch_j",
    "energy_per_query_j",
    "attribution",
    "power_w",
    "note",
)
"""``extra["interleave"]``: what the search (run/search.py) and users read."""


class VirtualTime:
    """A clock that moves only when a task runs or the scheduler sleeps: the schedulers'
    decisions become exact and repeatable (no timing on a shared machine)."""

    def __init__(self, train_s: float, infer_s: float) -> None:
        self.t = 1000.0
        self.train_s = train_s
        self.infer_s = infer_s
        self.batches: list[int] = []

    def clock(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.t += seconds

    def train(self) -> None:
        self.t += self.train_s

    def infer(self, n: int) -> None:
        self.batches.append(n)
        self.t += self.infer_s


def seeded(train_s: float, infer_s: float) -> Estimates:
    est = Estimates()
    est.train_s.append(train_s)
    est.infer_s.append(infer_s)
    return est


def alternating(train_s: float, infer_s: float, stream: Stream) -> tuple[WindowStats, VirtualTime]:
    vt = VirtualTime(train_s, infer_s)
    stats = run_alternating(
        vt.train, vt.infer, stream, seeded(train_s, infer_s), clock=vt.clock, sleep=vt.sleep
    )
    return stats, vt


def check_bookkeeping(stats: WindowStats) -> None:
    """Every query once, in arrival order, served after it arrived; calls do not overlap
    within one task; busy times are the sums of the calls."""
    arrivals = [q.arrival_s for q in stats.queries]
    assert arrivals == sorted(arrivals)
    if stats.stream.rate_qps is not None:
        assert arrivals == pytest.approx(stats.stream.arrivals_s, abs=1e-9)
    for q in stats.queries:
        assert q.arrival_s <= q.start_s + 1e-12 <= q.finish_s + 2e-12
        assert q.latency_s == q.finish_s - q.arrival_s
    assert sum(n for _, _, n in stats.infer_calls) == len(stats.queries)
    assert all(1 <= n <= stats.stream.infer_batch_size for _, _, n in stats.infer_calls)
    for calls in (stats.train_calls, [(a, b) for a, b, _ in stats.infer_calls]):
        for (_, end), (start, _) in itertools.pairwise(calls):
            assert end <= start + 1e-12
    assert stats.busy_train_s == pytest.approx(math.fsum(b - a for a, b in stats.train_calls))
    assert stats.deadline_misses == sum(
        1 for q in stats.queries if q.latency_s > stats.stream.deadline_s
    )


# ---- the stream ---------------------------------------------------------------------------


def test_stream_arrivals_are_evenly_spaced() -> None:
    s = Stream(10.0, 4, 0.1, 2.0)
    assert s.arrivals_s == pytest.approx([k / 10 for k in range(20)])
    assert Stream(None, 4, 0.1, 2.0).arrivals_s == []


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"rate_qps": 0.0}, "rate_qps"),
        ({"rate_qps": math.inf}, "rate_qps"),
        ({"infer_batch_size": 0}, "infer_batch_size"),
        ({"deadline_s": -1.0}, "deadline_s"),
        ({"window_s": math.nan}, "window_s"),
    ],
)
def test_stream_refuses_bad_values_naming_them(kwargs: dict[str, float], words: str) -> None:
    base: dict[str, float | None] = {
        "rate_qps": 10.0,
        "infer_batch_size": 1,
        "deadline_s": 0.1,
        "window_s": 1.0,
    }
    base.update(kwargs)
    with pytest.raises(WorkloadError, match=words) as e:
        Stream(**base)  # type: ignore[arg-type]
    assert isinstance(e.value, EdgeEnergyError)


# ---- the alternating scheduler -------------------------------------------------------------


def test_alternating_no_query_waits_longer_than_one_step_and_one_batch() -> None:
    stats, _vt = alternating(0.020, 0.005, Stream(10.0, 4, 0.1, 2.0))
    check_bookkeeping(stats)
    assert len(stats.queries) == 20 and stats.deadline_misses == 0 and stats.forced == 0
    assert max(q.start_s - q.arrival_s for q in stats.queries) <= 0.020 + 0.005 + 1e-9
    # training fills the gaps: several minibatches per 100 ms period, each one whole
    assert stats.train_minibatches >= 20 * 3
    assert stats.busy_train_s == pytest.approx(0.020 * stats.train_minibatches)
    assert stats.busy_infer_s == pytest.approx(0.005 * len(stats.infer_calls))
    # training stops at the window's end; the window ends with its last call
    assert stats.train_calls[-1][0] < 2.0
    assert stats.span_s == pytest.approx(max(stats.train_calls[-1][1], stats.infer_calls[-1][1]))


@settings(max_examples=60, deadline=None)
@given(
    train_ms=st.integers(1, 90),
    infer_ms=st.integers(1, 10),
    rate_qps=st.sampled_from([2.0, 5.0, 10.0, 20.0, 50.0]),
    batch=st.integers(1, 8),
)
def test_alternating_keeps_the_deadline_when_a_step_and_a_batch_fit(
    train_ms: int, infer_ms: int, rate_qps: float, batch: int
) -> None:
    """With exact estimates, a minibatch + a batch within the deadline and batches shorter
    than the period, no query misses and no minibatch is forced."""
    train_s, infer_s = train_ms / 1000, infer_ms / 1000
    stream = Stream(rate_qps, batch, 0.1, 1.0)
    if train_s + infer_s > stream.deadline_s or infer_s > 1 / rate_qps:
        return
    stats, _ = alternating(train_s, infer_s, stream)
    check_bookkeeping(stats)
    assert stats.deadline_misses == 0 and stats.forced == 0
    assert stats.train_minibatches >= 1


def test_alternating_waits_for_queries_rather_than_miss() -> None:
    """A 150 ms minibatch cannot run between queries 100 ms apart with a 100 ms bound unless
    it starts right after a query: the policy waits for the query, serves it, then trains."""
    stats, _ = alternating(0.150, 0.010, Stream(10.0, 1, 0.1, 2.0))
    check_bookkeeping(stats)
    assert stats.deadline_misses == 0 and stats.forced == 0
    assert stats.train_minibatches >= 9  # one per two periods
    for a, _ in stats.train_calls:  # each minibatch starts when a batch has just finished
        assert any(abs(a - end) < 1e-9 for _, end, _ in stats.infer_calls)


def test_alternating_forces_a_minibatch_that_cannot_fit_once_per_refresh() -> None:
    """A 300 ms minibatch never fits a 100 ms bound at 10 queries/s: training waits, and
    runs one minibatch (forced, counted) per REFRESH_S."""
    window_s = 3.0
    stats, _ = alternating(0.300, 0.010, Stream(10.0, 4, 0.1, window_s))
    check_bookkeeping(stats)
    assert 1 <= stats.forced <= math.ceil(window_s / REFRESH_S)
    assert stats.deadline_misses >= 1  # the forced minibatches' cost, reported


def test_alternating_trains_when_inference_cannot_keep_up() -> None:
    """Batches of 4 queries take 0.5 s and 4 queries arrive every 0.4 s: queries wait after
    every batch, the queue never empties, and training still runs one minibatch (forced)
    per REFRESH_S, right after a batch."""
    train_s, infer_s = 0.050, 0.500
    stats, _ = alternating(train_s, infer_s, Stream(10.0, 4, 0.1, 3.5))
    check_bookkeeping(stats)
    assert len(stats.queries) == 35  # every query served, after the window if need be
    assert stats.train_minibatches >= 2 and stats.forced == stats.train_minibatches
    starts = [a for a, _ in stats.train_calls]
    assert starts[0] <= REFRESH_S + infer_s + 1e-9
    for (_, end), start in zip(stats.train_calls, starts[1:], strict=False):
        assert REFRESH_S - 1e-9 <= start - end <= REFRESH_S + infer_s + 1e-9
    for a in starts:  # each right after a batch, with queries waiting
        assert any(abs(a - end) < 1e-9 for _, end, _ in stats.infer_calls)
        assert any(q.arrival_s <= a < q.start_s for q in stats.queries)


def test_a_window_without_a_minibatch_is_a_measured_result() -> None:
    """One inference batch longer than the window: no minibatch (training stops at the
    window's end); the figures say 0 minibatches/s and a note, and the search reads an
    infeasible point, not a failure."""
    from pytest_edgeenergy.run.search import interleave_trial
    from pytest_edgeenergy.search import Objective

    stats, _ = alternating(0.050, 2.5, Stream(10.0, 4, 0.1, 2.0))
    check_bookkeeping(stats)
    assert stats.train_minibatches == 0 and len(stats.queries) == 20
    extra = interleave_extra(
        windows=[(stats, 40.0, stats.span_s)],
        train_workload="t",
        infer_workload="i",
        train_batch_size=2,
    )
    assert extra["train_minibatches_per_s"] == 0.0
    assert extra["note"] is not None and "no training minibatch" in extra["note"]
    assert extra["latency_p99_s"] is not None and extra["queries"] == 20
    trial = interleave_trial(
        {}, {"interleave": extra}, Objective("max-train-throughput"), stats.span_s, 20.0
    )
    assert trial.failed is None and trial.infeasible is not None
    assert trial.metrics["train_minibatches_per_s"] == 0.0


def test_the_progress_note_names_the_windows_without_a_minibatch() -> None:
    ok, _ = alternating(0.020, 0.005, Stream(10.0, 4, 0.1, 1.0))
    stalled, _ = alternating(0.050, 2.5, Stream(10.0, 4, 0.1, 1.0))

    def note(*windows: WindowStats) -> object:
        return interleave_extra(
            windows=[(s, 10.0, s.span_s) for s in windows],
            train_workload="t",
            infer_workload="i",
            train_batch_size=2,
        )["note"]

    assert note(ok, ok) is None
    assert note(ok, stalled) == "1 of 2 windows finished no training minibatch"
    assert note(stalled, stalled) == (
        "no training minibatch finished in 2 windows (0 minibatches/s: an infeasible point "
        "for a search)"
    )


def test_alternating_closed_loop_alternates() -> None:
    stats, vt = alternating(0.020, 0.005, Stream(None, 4, 0.1, 1.0))
    check_bookkeeping(stats)
    assert stats.train_minibatches == len(stats.infer_calls)
    assert vt.batches == [4] * len(stats.infer_calls)
    # each batch arrives when the previous one completes (the first at the start) and
    # waits for one minibatch
    assert [q.latency_s for q in stats.queries] == pytest.approx([0.025] * len(stats.queries))


def test_solo_windows() -> None:
    vt = VirtualTime(0.02, 0.005)
    stream = Stream(10.0, 2, 0.1, 1.0)
    train = run_train_alone(vt.train, stream, clock=vt.clock)
    assert train.train_minibatches in (50, 51) and not train.queries
    infer = run_infer_alone(vt.infer, stream, clock=vt.clock, sleep=vt.sleep)
    check_bookkeeping(infer)
    assert len(infer.queries) == 10 and infer.train_minibatches == 0
    assert all(q.latency_s == pytest.approx(0.005) for q in infer.queries)
    assert infer.span_s == pytest.approx(1.0)  # the whole schedule, as fixed-rate


# ---- the threads scheduler (real threads, real sleeps: bookkeeping only) --------------------


def test_threads_runs_both_tasks_at_once_and_keeps_the_books() -> None:
    in_train = threading.Event()
    overlapped: list[bool] = []

    def train() -> None:
        in_train.set()
        time.sleep(0.01)
        in_train.clear()

    def infer(n: int) -> None:
        overlapped.append(in_train.is_set())
        time.sleep(0.002)

    stats = run_threads(train, infer, Stream(20.0, 2, 0.1, 0.5))
    check_bookkeeping(stats)
    assert len(stats.queries) == 10 and stats.train_minibatches >= 1
    assert stats.scheduler == "threads" and stats.forced == 0
    assert len(overlapped) == len(stats.infer_calls)


def test_threads_raises_the_training_threads_error() -> None:
    def train() -> None:
        raise RuntimeError("minibatch failed")

    with pytest.raises(RuntimeError, match="minibatch failed"):
        run_threads(train, lambda n: None, Stream(20.0, 1, 0.1, 0.2))


# ---- attribution ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    energy_j=st.floats(0.0, 1e6),
    window_s=st.floats(0.0, 1e4),
    busy_train_s=st.floats(0.0, 1e4),
    busy_infer_s=st.floats(0.0, 1e4),
)
def test_busy_time_attribution_sums_to_the_window(
    energy_j: float, window_s: float, busy_train_s: float, busy_infer_s: float
) -> None:
    a = busy_time_attribution(energy_j, window_s, busy_train_s, busy_infer_s)
    assert math.isclose(a.total_j, energy_j, rel_tol=1e-9, abs_tol=1e-9)
    assert a.train_j >= 0 and a.infer_j >= 0 and a.other_j >= 0
    if 0 < window_s <= busy_train_s + busy_infer_s and energy_j >= sys.float_info.min:
        assert a.other_j == 0.0  # no rest: no third share, not even float dust
    if busy_train_s > 0 and busy_infer_s > 0:
        assert math.isclose(
            a.train_j * busy_infer_s, a.infer_j * busy_train_s, rel_tol=1e-9, abs_tol=1e-12
        )


def test_busy_time_attribution_keeps_waiting_as_a_third_share() -> None:
    a = busy_time_attribution(100.0, 10.0, 6.0, 1.0)
    assert (a.train_j, a.infer_j, a.other_j) == pytest.approx((60.0, 10.0, 30.0))
    # threads: busy times overlap past the window; no rest, the two in proportion
    b = busy_time_attribution(100.0, 10.0, 9.0, 3.0)
    assert (b.train_j, b.infer_j, b.other_j) == pytest.approx((75.0, 25.0, 0.0))


def test_attribution_reports_float_dust_as_zero() -> None:
    """A share that is a difference of floats: rounding (-1.4e-14 J) is 0, a real
    difference stays, negative included (marginal)."""
    # threads: busy times past the window, so no rest; the remainder rounds to -1.4e-14
    energy_j, window_s, busy_train_s, busy_infer_s = (
        198.67859974968445,
        5.045419583098643,
        6.515929727227629,
        7.887233511355132,
    )
    assert busy_time_attribution(energy_j, window_s, busy_train_s, busy_infer_s).other_j == 0.0
    stats = WindowStats("threads", Stream(10.0, 1, 0.1, window_s))
    stats.train_calls.append((0.0, busy_train_s))
    stats.infer_calls.append((0.0, busy_infer_s, 1))
    stats.queries.append(QueryRecord(0.0, 0.0, busy_infer_s))
    extra = interleave_extra(
        windows=[(stats, energy_j, window_s)] * 3,
        train_workload="t",
        infer_workload="i",
        train_batch_size=2,
    )
    assert extra["energy_other_j"] == 0.0
    # 0.3 J less 3 minibatches of 0.1 J is -5.6e-17 in floats
    dust = marginal_attribution(0.3, 3, 1, train_alone=(0.1, 1), infer_alone=(1.0, 1))
    assert dust["energy_infer_j"] == 0.0
    real = marginal_attribution(0.2, 3, 1, train_alone=(0.1, 1), infer_alone=(1.0, 1))
    assert real["energy_infer_j"] == pytest.approx(-0.1)


def test_busy_time_attribution_refuses_bad_figures() -> None:
    with pytest.raises(WorkloadError, match="busy_train_s"):
        busy_time_attribution(1.0, 1.0, -0.5, 0.0)


def test_marginal_attribution_against_each_task_alone() -> None:
    m = marginal_attribution(100.0, 10, 20, train_alone=(60.0, 10), infer_alone=(40.0, 20))
    assert m["energy_infer_j"] == pytest.approx(40.0)  # 100 - 10 minibatches x 6 J
    assert m["energy_train_j"] == pytest.approx(60.0)  # 100 - 20 queries x 2 J
    assert m["energy_per_query_j"] == pytest.approx(2.0)
    assert m["energy_per_train_minibatch_j"] == pytest.approx(6.0)
    none = marginal_attribution(100.0, 10, 20, train_alone=(60.0, 0), infer_alone=(40.0, 20))
    assert none["energy_infer_j"] is None and none["energy_train_j"] == pytest.approx(60.0)


def test_interleave_extra_carries_the_contract_and_sums_exactly() -> None:
    s1, _ = alternating(0.02, 0.005, Stream(10.0, 4, 0.1, 1.0))
    s2, _ = alternating(0.02, 0.005, Stream(10.0, 4, 0.1, 1.0))
    extra = interleave_extra(
        windows=[(s1, 17.3, 1.01), (s2, 16.9, 1.02)],
        train_workload="t",
        infer_workload="i",
        train_batch_size=2,
        marginal={"energy_infer_j": 1.0},
    )
    assert set(CONTRACT) <= set(extra)
    assert extra["attribution"] == "busy-time" and extra["marginal"] == {"energy_infer_j": 1.0}
    parts = extra["energy_train_j"] + extra["energy_infer_j"] + extra["energy_other_j"]
    assert math.isclose(parts, 17.3 + 16.9, rel_tol=1e-9)
    assert extra["energy_j"] == pytest.approx(34.2)
    assert extra["queries"] == 20 and extra["deadline_misses"] == 0
    mb = s1.train_minibatches + s2.train_minibatches
    assert extra["train_minibatches"] == mb
    assert extra["train_minibatches_per_s"] == pytest.approx(mb / 2.03)
    assert extra["train_items_per_s"] == pytest.approx(2 * mb / 2.03)
    assert extra["power_w"] == pytest.approx(34.2 / 2.03)
    assert extra["energy_per_query_j"] == pytest.approx(extra["energy_infer_j"] / 20)
    assert json.loads(json.dumps(extra)) == extra
    invalid = interleave_extra(
        windows=[(s1, None, 1.0)], train_workload="t", infer_workload="i", train_batch_size=2
    )
    assert invalid["energy_j"] is None and invalid["energy_per_query_j"] is None
    assert invalid["power_w"] is None and invalid["queries"] == 10
    assert "marginal" not in invalid and invalid["attribution_methods"] == ["busy-time"]


def test_build_refuses_unknown_names_before_building() -> None:
    stream = Stream(10.0, 1, 0.1, 1.0)
    with pytest.raises(WorkloadError, match="scheduler 'fifo' is not known"):
        build_interleaved(
            "lstm_lm_train", "resnet18", train_batch_size=1, stream=stream, scheduler="fifo"
        )
    with pytest.raises(WorkloadError, match="resnet18 is not a training workload"):
        build_interleaved(
            "resnet18", "resnet18", train_batch_size=1, stream=stream, scheduler="threads"
        )
    with pytest.raises(WorkloadError, match="intra_op_threads"):
        build_interleaved(
            "lstm_lm_train",
            "resnet18",
            train_batch_size=1,
            stream=stream,
            scheduler="threads",
            intra_op_threads=0,
        )


# ---- the suite, end to end on a virtual board ----------------------------------------------


def test_suite_quick_on_a_virtual_orin_nano(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the suites need torch")
    pytest.importorskip("torchvision", reason="the suites need torchvision")
    from suite_runs import SUITES, run_suites

    report = tmp_path / "report.json"
    proc = run_suites(
        str(SUITES / "test_interleave.py"),
        "--edge-board=sim:orin-nano",
        "--edge-quick",
        "--edge-repeats=1",  # one interleaved window per scheduler: each is 2 s of training
        f"--edge-report={report}",
        cwd=tmp_path,
    )
    data = json.loads(report.read_text())
    passed = [t for t in data["tests"] if t["status"] == "passed"]
    assert {t["extra"]["interleave"]["scheduler"] for t in passed} == {"alternating", "threads"}
    for t in passed:
        x = t["extra"]["interleave"]
        assert set(CONTRACT) <= set(x), sorted(set(CONTRACT) - set(x))
        # every query served; training's progress is measured, whatever the host's load:
        # none is 0 minibatches/s and a note, not a failed test
        assert x["queries"] == 20 * x["windows"]
        assert x["train_minibatches_per_s"] == x["train_minibatches"] / x["duration_s"]
        assert x["train_minibatches"] > 0 or "no training minibatch" in x["note"]
        assert x["rate_qps"] == 10.0 and x["deadline_s"] == 0.1
        assert x["infer_batch_size"] == t["params"]["batch_size"]
        windows_j = [r["energy_j"] for r in t["extra"]["runs"][0]["repeats"]]
        assert len(windows_j) == x["windows"] and None not in windows_j
        parts = x["energy_train_j"] + x["energy_infer_j"] + x["energy_other_j"]
        assert math.isclose(parts, sum(windows_j), rel_tol=0.01)
        assert math.isclose(x["energy_j"], sum(windows_j), rel_tol=0.01)
        assert x["attribution_methods"] == ["busy-time", "marginal"]
        assert x["marginal"]["train_alone_energy_per_minibatch_j"] > 0
        for name in ("train_throughput", "query_latency_p99", "energy_per_query"):
            assert t["metrics"][name]["value"] is not None, name
        assert {"train_alone.energy_j", "infer_alone.energy_j"} <= set(t["metrics"])
    assert "mobilenet_v3_small_train+mobilenet_v2" in proc.stdout
    # the terminal's interleaved table: one row per scheduler, with its late queries
    table = proc.stdout.split("training and inference interleaved (SIMULATED)")[1]
    for t in passed:
        x = t["extra"]["interleave"]
        row = re.compile(
            rf" {x['scheduler']}@10/s +4 .* 100 ms: {x['deadline_misses']}/{x['queries']} late"
        )
        assert any(row.search(line) for line in table.splitlines()), table


def test_edge_bench_note_goes_to_the_entrys_extra() -> None:
    """``edge_bench.note`` (how the suite records ``extra.interleave``): its own keys only."""
    from pytest_edgeenergy.bench.runner import EdgeBench
    from pytest_edgeenergy.bench.settings import QUICK

    bench = EdgeBench(None, "t::x", QUICK)  # type: ignore[arg-type]  # note needs no board
    bench.note("interleave", {"queries": 3})
    assert bench.report()["extra"]["interleave"] == {"queries": 3}
    for taken in ("runs", "phases", "preflight", "formulas", ""):
        with pytest.raises(ValueError, match="taken by edge_bench"):
            bench.note(taken, 1)


def test_the_summary_table_shows_each_tasks_figures_and_the_scheduler() -> None:
    """The terminal's interleaved table: one row per test that noted ``interleave``, with
    its scheduler, minibatches/s, p99, J per minibatch and per query, and its note."""
    from pytest_edgeenergy.bench.runner import EdgeBench
    from pytest_edgeenergy.bench.settings import QUICK
    from pytest_edgeenergy.present.interleave_summary import (
        INTERLEAVE_HEADER,
        INTERLEAVE_INTRO,
        interleave_lines,
        interleave_rows,
    )

    def noted(stats: WindowStats) -> EdgeBench:
        bench = EdgeBench(None, "t::x", QUICK)  # type: ignore[arg-type]  # note needs no board
        extra = interleave_extra(
            windows=[(stats, 40.0, 2.0)], train_workload="t", infer_workload="i", train_batch_size=2
        )
        bench.note("interleave", extra)
        return bench

    ok, _ = alternating(0.020, 0.005, Stream(10.0, 4, 0.1, 2.0))
    assert (ok.train_minibatches, len(ok.queries)) == (96, 20)
    stalled, _ = alternating(0.050, 2.5, Stream(10.0, 4, 0.1, 2.0))
    plain = EdgeBench(None, "t::plain", QUICK)  # type: ignore[arg-type]
    rows = interleave_rows([noted(ok), plain, noted(stalled)])
    assert rows[0] == INTERLEAVE_HEADER and len(rows) == 3
    # busy 1.92 s training + 0.1 s inference (past the 2 s window: no rest), 40 J in that
    # proportion: 40 x 1.92 / 2.02 / 96 minibatches, 40 x 0.1 / 2.02 / 20 queries
    assert rows[1] == (
        "t+i", "alternating@10/s", "4", "-", "48", "25 ms", "396 mJ", "99 mJ", "0 J",
        "100 ms: 0/20 late",
    )  # fmt: skip
    assert rows[2][4:7] == ("0", "13.3 s", "-")
    assert rows[2][9].startswith("100 ms: 20/20 late; no training minibatch finished")
    assert interleave_rows([plain]) == []
    intro, names, *lines = interleave_lines([noted(ok), plain, noted(stalled)])
    assert intro == INTERLEAVE_INTRO and names.split("  ")[0] == "workload"
    assert [line.index("100 ms") for line in lines] == [names.index("deadline")] * 2
    assert interleave_lines([plain]) == []


def test_suite_searched_for_training_throughput_on_a_virtual_orin_nano(tmp_path: Path) -> None:
    """The issue's search, live: the interleaved suite under ``--edge-search`` with the
    max-train-throughput objective; each trial is read from the test's own figures."""
    pytest.importorskip("torch", reason="the suites need torch")
    pytest.importorskip("torchvision", reason="the suites need torchvision")
    from suite_runs import SUITES, run_suites

    report = tmp_path / "report.json"
    run_suites(
        str(SUITES / "test_interleave.py"),
        "--edge-board=sim:orin-nano",
        "--edge-quick",
        "--edge-repeats=1",
        "-k",
        "cpu and alternating",
        "--edge-search=random",
        "--edge-trials=2",
        "--edge-objective=max-train-throughput",
        "--edge-latency-budget-s=60",
        "--edge-power-budget-w=1000",
        "--gpu-freq=min,max",
        "--batch-size=1,4",
        f"--edge-report={report}",
        cwd=tmp_path,
    )
    data = json.loads(report.read_text())
    (search,) = data["search"]
    assert search["objective"] == "max-train-throughput"
    assert len(search["trials"]) == 2
    by_trial = {
        t["extra"]["search"]["trial"]: t
        for t in data["tests"]
        if "search" in t.get("extra", {}) and t["extra"]["search"]["trial"] is not None
    }
    for position, trial in enumerate(search["trials"]):
        assert trial["failed"] is None, trial  # measured, whatever training managed
        x = by_trial[position]["extra"]["interleave"]
        assert trial["metrics"]["train_minibatches_per_s"] == x["train_minibatches_per_s"]
        assert trial["metrics"]["latency_p99_s"] == x["latency_p99_s"]
        assert x["infer_batch_size"] == trial["knobs"]["batch_size"]
        if x["train_minibatches"] > 0:
            assert "infeasible" not in trial  # budgets no trial can miss
            assert math.isclose(trial["time_s"], 1.0 / x["train_minibatches_per_s"], rel_tol=1e-9)
        else:  # a loaded host: a measured point where training made no progress
            assert trial["infeasible"] == "no training minibatch finished in the window"
    assert (search["best"] is None) == all("infeasible" in t for t in search["trials"])
