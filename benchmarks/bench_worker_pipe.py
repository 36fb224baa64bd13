"""What running a workload in a worker (``--edge-workload-python``) costs: the pipe's time
per call, and energy per item of the same ~5 ms call in process and in a worker.

1. Pipe time per call, worker in Python 3.8 (pyenv's, else this interpreter) with a no-op
   call: a round trip of one call (what a paced scenario pays per query), median and p90 of
   :data:`ROUND_TRIPS`; and in a repeat's batch (one request for all its calls), the wall
   time of the request less the calls' own times, per call, against this process's own
   timing loop doing the same no-op calls. Target: <= 0.1 ms per call.
2. Energy per item on a virtual Orin Nano whose load is pinned (``--edge-sim-load=0.3``: its
   power does not follow this machine's), :data:`PAIRS` alternating pairs of runs of
   :data:`CALLS` calls each, in process and in the worker: calls sleeping to the next 5 ms
   tick of the monotonic clock (work of a determined duration), and zlib compressing 256 KiB
   (~5 ms of real CPU work here). Figure: the mean of the pairs' relative differences with
   its 95 % interval. Target: within 2 %.

Run with ``pytest benchmarks/bench_worker_pipe.py --benchmark-only -s``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pytest_edgeenergy.bench.remote import RemoteWorkload
from pytest_edgeenergy.bench.settings import WorkloadPlacement
from pytest_edgeenergy.bench.worker import WorkerProcess

ROUND_TRIPS = 2000
BATCH_CALLS = 20_000
BATCHES = 5
PAIRS = 8
CALLS = 200
PERIOD_S = 0.005
ZLIB_BYTES = 256 * 1024
TARGET_PIPE_MS = 0.1
TARGET_ENERGY_PCT = 2.0
T_975 = {7: 2.365}
"""Student's t, two-sided 95 %, by degrees of freedom (PAIRS - 1)."""


def worker_python() -> str:
    """pyenv's Python 3.8 (JetPack 5's system Python), else this interpreter."""
    for root in (Path.home() / ".pyenv" / "versions").glob("3.8.*"):
        python = root / "bin" / "python3.8"
        if python.exists():
            return str(python)
    return sys.executable


def nothing() -> None:
    """This process's no-op call."""


def test_pipe_time_per_call(benchmark: Any) -> None:
    python = worker_python()
    worker = WorkerProcess(WorkloadPlacement(python=python))
    try:
        noop = RemoteWorkload(worker, worker.build({"kind": "sleep", "seconds": 0.0}))
        noop.run_calls(100)

        def run() -> dict[str, float]:
            trips = []
            for _ in range(ROUND_TRIPS):
                t0 = time.perf_counter()
                noop()
                trips.append(time.perf_counter() - t0)
            extra = []
            for _ in range(BATCHES):
                t0 = time.perf_counter()
                batch = noop.run_calls(BATCH_CALLS)
                wall = time.perf_counter() - t0
                extra.append((wall - sum(batch.latencies_s)) / BATCH_CALLS)
            local = []
            for _ in range(BATCHES):
                lat: list[float] = []
                append, perf = lat.append, time.perf_counter
                t0 = perf()
                for _ in range(BATCH_CALLS):
                    c0 = perf()
                    nothing()
                    append(perf() - c0)
                local.append((perf() - t0 - sum(lat)) / BATCH_CALLS)
            trips.sort()
            return {
                "round_trip_ms_median": statistics.median(trips) * 1e3,
                "round_trip_ms_p90": trips[int(0.9 * len(trips))] * 1e3,
                "batched_ms_per_call": statistics.median(extra) * 1e3,
                "in_process_loop_ms_per_call": statistics.median(local) * 1e3,
            }

        figures = benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        worker.close()
    benchmark.extra_info.update({k: round(v, 4) for k, v in figures.items()})
    benchmark.extra_info["worker_python"] = python
    print(
        f"\npipe time per call, worker {python} (target <= {TARGET_PIPE_MS} ms):\n"
        f"  one call per request (a paced scenario's query): median "
        f"{figures['round_trip_ms_median']:.3f} ms, p90 {figures['round_trip_ms_p90']:.3f} ms\n"
        f"  a repeat's calls in one request: {figures['batched_ms_per_call'] * 1e3:.2f} us per "
        f"call beside the calls (this process's own timing loop: "
        f"{figures['in_process_loop_ms_per_call'] * 1e3:.2f} us)"
    )


INNER = f"""
import random
import time
import zlib

PERIOD_S = {PERIOD_S}
DATA = random.Random(0).getrandbits(8 * {ZLIB_BYTES}).to_bytes({ZLIB_BYTES}, "little")


def tick():
    deadline = (int(time.monotonic() / PERIOD_S) + 1) * PERIOD_S
    left = deadline - time.monotonic()
    while left > 0:
        time.sleep(left)
        left = deadline - time.monotonic()


def compress():
    zlib.compress(DATA, 6)


def test_pairs(edge_bench):
    kw = dict(items_per_call=1, repeats=1, items={CALLS}, warmup=2, calibrate=False)
    for name, here, spec in (
        ("tick", tick, {{"kind": "sleep", "seconds": PERIOD_S, "aligned": True}}),
        ("zlib", compress, {{"kind": "zlib", "bytes": {ZLIB_BYTES}, "level": 6, "seed": 0}}),
    ):
        remote = edge_bench.load_in_worker(spec, label=f"load-{{name}}")
        for k in range({PAIRS}):
            order = [("in", here), ("out", remote)]
            for where, work in order if k % 2 == 0 else order[::-1]:
                edge_bench.run(work, label=f"{{name}}-{{where}}{{k}}", **kw)
"""


def _interval(diffs: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(diffs)
    half = T_975[len(diffs) - 1] * statistics.stdev(diffs) / len(diffs) ** 0.5
    return mean, half


def test_energy_per_item_in_and_out_of_process(benchmark: Any, tmp_path: Path) -> None:
    python = worker_python()
    (tmp_path / "test_pairs.py").write_text(INNER)
    report = tmp_path / "r.json"
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--edge-board=sim:orin-nano",
        "--edge-sim-load=0.3",
        "--edge-idle-s=0",
        f"--edge-workload-python={python}",
        f"--edge-report={report}",
        "test_pairs.py",
    ]

    def run() -> dict[str, Any]:
        done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        metrics = json.loads(report.read_text())["tests"][0]["metrics"]
        out: dict[str, Any] = {}
        for name in ("tick", "zlib"):
            energy = {
                (w, k): metrics[f"{name}-{w}{k}.energy_per_item"]["value"]
                for w in ("in", "out")
                for k in range(PAIRS)
            }
            diffs = [
                (energy["out", k] - energy["in", k]) / energy["in", k] * 100 for k in range(PAIRS)
            ]
            mean, half = _interval(diffs)
            latency = [metrics[f"{name}-in{k}.latency_mean"]["value"] for k in range(PAIRS)]
            out[name] = {
                "in_mj_per_item": statistics.fmean(energy["in", k] for k in range(PAIRS)) * 1e3,
                "out_mj_per_item": statistics.fmean(energy["out", k] for k in range(PAIRS)) * 1e3,
                "diff_pct_mean": mean,
                "diff_pct_ci95": half,
                "call_ms": statistics.fmean(latency) * 1e3,
            }
        return out

    figures = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    lines = [
        f"\nenergy per item, {PAIRS} alternating pairs of {CALLS} calls, virtual Orin Nano "
        f"(SIMULATED, load pinned at 0.3), worker {python} (target within "
        f"{TARGET_ENERGY_PCT:g} %):"
    ]
    for name, f in figures.items():
        lines.append(
            f"  {name} (~{f['call_ms']:.1f} ms a call): in process {f['in_mj_per_item']:.3f} mJ, "
            f"in the worker {f['out_mj_per_item']:.3f} mJ: {f['diff_pct_mean']:+.2f} % "
            f"(95 % interval +-{f['diff_pct_ci95']:.2f} %)"
        )
    print("\n".join(lines))
