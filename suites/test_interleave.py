"""Training and inference on one board at once (:mod:`pytest_edgeenergy.workloads.interleave`).

Each case: a training loop (the training suite's model and data pipeline) and an inference
stream (queries evenly spaced at ``rate_qps``, a latency bound of :data:`DEADLINE_S`, batches
of at most ``batch_size`` queries: the ``batch_size`` fixture is the INFERENCE batch size, so
``--batch-size`` and a search over it vary it), run together by one ``scheduler``
(``alternating``: one thread, Fulcrum's way; ``threads``: the naive way) at the operating
point. One call of ``edge_bench.run`` = one whole interleaved window of ``window_s`` seconds
(items = windows), so the plain metrics describe windows; the per-task figures are derived
metrics (``train_throughput``, ``query_latency_p99``, ``energy_per_train_minibatch``,
``energy_per_query``) and the report entry's ``extra.interleave``. Each case also measures
one window of training alone and one of the stream alone (labels ``train_alone``,
``infer_alone``): the marginal attribution.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("torch", reason="the benchmark suites need torch (pip install torch)")
pytest.importorskip("torchvision", reason="the interleaved suite needs torchvision")

from pytest_edgeenergy.bench.scenarios import OFFLINE
from pytest_edgeenergy.workloads.grid import check_and_preflight, is_quick, phase_or_skip
from pytest_edgeenergy.workloads.interleave import (
    SCHEDULERS,
    InterleavedWorkload,
    Stream,
    WindowStats,
    build_interleaved,
    interleave_extra,
    marginal_attribution,
)
from pytest_edgeenergy.workloads.modes import DEVICES
from pytest_edgeenergy.workloads.remote import in_process_only
from pytest_edgeenergy.workloads.training import prepare_training_data

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.result import BenchResult
    from pytest_edgeenergy.bench.runner import EdgeBench

DEADLINE_S = 0.1
WINDOW_S = 6.0
QUICK_WINDOW_S = 2.0
PAIRS = (("mobilenet_v3_small_train", 2, "mobilenet_v2"),)
"""(training workload, training batch size, inference workload): small enough that the
alternating scheduler keeps 100 ms at 10 queries/s on a 2-core CPU."""
RATES_QPS = (10.0,)
CPU_INTRA_OP_THREADS = 1
"""On a CPU the two tasks share the cores: torch's default (one intra-op thread per core)
oversubscribes them, and with a busy neighbour a 65 ms minibatch then takes seconds."""


def _pair_params() -> list[object]:
    return [
        pytest.param(t, tb, i, d, id=f"{t}-bs{tb}+{i}-{d}", marks=pytest.mark.workload(f"{t}+{i}"))
        for t, tb, i in PAIRS
        for d in DEVICES
    ]


def _measure(
    edge_bench: EdgeBench,
    work: InterleavedWorkload,
    fn: object,
    label: str,
    repeats: int | None,
) -> tuple[BenchResult, list[WindowStats]]:
    """``repeats`` windows of ``fn`` (one call each), and the stats of those windows."""
    before = len(work.windows)
    result = edge_bench.run(
        fn,  # type: ignore[arg-type]
        items_per_call=1,
        items=1,
        warmup=0,
        calibrate=False,
        repeats=repeats,
        label=label,
        params=work.params(),
        device=work.train.device,
        scenario=OFFLINE,
    )
    stats = work.windows[before:]
    assert len(stats) == len(result.repeats)
    return result, stats


@pytest.mark.edge_grid(batch_size=4)
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("rate_qps", RATES_QPS, ids=[f"{r:g}qps" for r in RATES_QPS])
@pytest.mark.parametrize("train_workload,train_batch_size,infer_workload,device", _pair_params())
def test_interleave(
    edge_bench: EdgeBench,
    operating_point: object,
    batch_size: int,
    train_workload: str,
    train_batch_size: int,
    infer_workload: str,
    device: str,
    rate_qps: float,
    scheduler: str,
    edge_weights_dir: Path | None,
    edge_data_dir: Path | None,
    edge_cache_dir: Path,
) -> None:
    in_process_only(edge_bench, "the interleave suite")
    check_and_preflight(edge_bench, train_workload, "eager", "fp32", device, train_batch_size)
    check_and_preflight(edge_bench, infer_workload, "eager", "fp32", device, batch_size)
    window_s = max(
        QUICK_WINDOW_S if is_quick(edge_bench) else WINDOW_S, edge_bench.settings.min_window_s
    )
    stream = Stream(rate_qps, batch_size, DEADLINE_S, window_s)
    data = prepare_training_data(
        train_workload, train_batch_size, data_dir=edge_data_dir, cache_root=edge_cache_dir
    )
    work = phase_or_skip(
        edge_bench,
        "load",
        lambda: build_interleaved(
            train_workload,
            infer_workload,
            train_batch_size=train_batch_size,
            stream=stream,
            scheduler=scheduler,
            device=device,
            data=data,
            weights_dir=edge_weights_dir,
            intra_op_threads=CPU_INTRA_OP_THREADS if device == "cpu" else None,
        ),
        device,
    )
    try:
        both, windows = _measure(edge_bench, work, work.window, "steady", None)
        t_res, t_stats = _measure(edge_bench, work, work.train_alone, "train_alone", 1)
        i_res, i_stats = _measure(edge_bench, work, work.infer_alone, "infer_alone", 1)
    finally:
        work.close()

    def solo(result: BenchResult, count: int) -> tuple[float, int] | None:
        e = result.repeats[0].energy_j
        return (e, count) if e is not None else None

    t_solo = solo(t_res, t_stats[0].train_minibatches)
    i_solo = solo(i_res, len(i_stats[0].queries))
    per_window = [(s, r.energy_j, r.duration_s) for s, r in zip(windows, both.repeats, strict=True)]
    marginal = None
    total_j = sum(e for _, e, _ in per_window if e is not None)
    if t_solo is not None and i_solo is not None and None not in [e for _, e, _ in per_window]:
        marginal = marginal_attribution(
            total_j,
            sum(s.train_minibatches for s in windows),
            sum(len(s.queries) for s in windows),
            t_solo,
            i_solo,
        )
        t_s, i_s = t_res.repeats[0].duration_s, i_res.repeats[0].duration_s
        marginal["train_alone_minibatches_per_s"] = t_stats[0].train_minibatches / t_s
        marginal["train_alone_power_w"] = t_solo[0] / t_s
        marginal["infer_alone_power_w"] = i_solo[0] / i_s
    extra = interleave_extra(
        windows=per_window,
        train_workload=train_workload,
        infer_workload=infer_workload,
        train_batch_size=train_batch_size,
        marginal=marginal,
    )
    edge_bench.note("interleave", extra)
    _derive(edge_bench, per_window)
    # Every query of every window served. Training's progress is a measured figure: a
    # window without a minibatch is 0 minibatches/s and a note (extra.interleave.note),
    # an infeasible point for a search, not a failed test.
    assert extra["queries"] == len(stream.arrivals_s) * len(windows)


def _derive(
    edge_bench: EdgeBench,
    per_window: list[tuple[WindowStats, float | None, float]],
) -> None:
    """Per-window task figures as report metrics (one value per repeat)."""
    from pytest_edgeenergy.workloads.interleave import busy_time_attribution

    trusted = all(e is not None for _, e, _ in per_window)
    parts = [
        busy_time_attribution(e, d, s.busy_train_s, s.busy_infer_s) if e is not None else None
        for s, e, d in per_window
    ]
    edge_bench.derive(
        "train_throughput",
        [s.train_minibatches / d if d > 0 else None for s, _, d in per_window],
        unit="minibatches/s",
        formula="training minibatches finished in the window / window duration",
    )
    edge_bench.derive(
        "query_latency_p99",
        [_p99(s) for s, _, _ in per_window],
        unit="s",
        formula="99th percentile of (finish - arrival) over the window's queries",
    )
    edge_bench.derive(
        "energy_per_train_minibatch",
        [
            p.train_j / s.train_minibatches if p is not None and s.train_minibatches else None
            for p, (s, _, _) in zip(parts, per_window, strict=True)
        ],
        unit="J",
        formula="window energy x busy_train / (busy_train + busy_infer + rest) / minibatches",
        trusted=trusted,
    )
    edge_bench.derive(
        "energy_per_query",
        [
            p.infer_j / len(s.queries) if p is not None and s.queries else None
            for p, (s, _, _) in zip(parts, per_window, strict=True)
        ],
        unit="J",
        formula="window energy x busy_infer / (busy_train + busy_infer + rest) / queries",
        trusted=trusted,
    )


def _p99(stats: WindowStats) -> float | None:
    from pytest_edgeenergy.bench.stats import percentile

    xs = sorted(stats.latencies_s)
    return percentile(xs, 99.0) if xs else None
