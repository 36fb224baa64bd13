"""The interleaved-workload table of the terminal summary: one row per test that noted
``extra["interleave"]`` (``edge_bench.note``: training and inference on one board at once,
``suites/test_interleave.py``), with its per-task figures. The benchmark table counts one
item per window for these tests; this table says what each task got."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..bench.runner import EdgeBench
from ..words import counted
from .bench_summary import _energy, _latency, _rate, paced

__all__ = ["INTERLEAVE_HEADER", "INTERLEAVE_INTRO", "INTERLEAVE_KEY", "interleave_rows"]

INTERLEAVE_KEY = "interleave"
"""The ``edge_bench.note`` key whose figures this table shows."""

INTERLEAVE_INTRO = (
    "per task, over each test's windows (extra.interleave); in the table above, an item of "
    "these tests is a window"
)
"""The line under the table's title."""

INTERLEAVE_HEADER = (
    "workload",
    "scheduler",
    "batch",
    "operating point",
    "minibatches/s",
    "query p99",
    "J/minibatch",
    "J/query",
    "J other",
    "deadline",
)


def _number(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _joules(x: object) -> str:
    """``839 mJ``; ``0 J`` (a share of nothing), ``-`` when unknown (an invalid window)."""
    j = _number(x)
    return "0 J" if j == 0 else _energy(j)


def _deadline_cell(x: Mapping[str, Any]) -> str:
    """``100 ms: 3/180 late; 2 minibatches forced; NOTE``."""
    parts = [
        f"{_latency(_number(x.get('deadline_s')))}: {x.get('deadline_misses')}/"
        f"{x.get('queries')} late"
    ]
    forced = x.get("forced_minibatches")
    if isinstance(forced, int) and forced > 0:
        parts.append(f"{counted(forced, 'minibatch', 'minibatches')} forced")
    if x.get("note"):
        parts.append(str(x["note"]))
    return "; ".join(parts)


def interleave_rows(benches: Iterable[EdgeBench], *, header: bool = True) -> list[tuple[str, ...]]:
    """Rows of (training+inference workloads, scheduler and rate, inference batch,
    operating point, training minibatches/s, query latency p99, J per minibatch, J per
    query, J of neither task (busy-time attribution), deadline: late queries, forced
    minibatches and the workload's note) for each bench that noted :data:`INTERLEAVE_KEY`;
    the header first unless ``header=False``; no rows at all when none did."""
    rows: list[tuple[str, ...]] = []
    for bench in benches:
        x = bench.notes.get(INTERLEAVE_KEY)
        if not isinstance(x, Mapping):
            continue
        results = bench.results
        rows.append(
            (
                f"{x.get('train_workload')}+{x.get('infer_workload')}",
                paced(x.get("scheduler"), x.get("rate_qps")),
                str(x.get("infer_batch_size")),
                results[0].operating_point if results else "-",
                _rate(_number(x.get("train_minibatches_per_s"))),
                _latency(_number(x.get("latency_p99_s"))),
                _joules(x.get("energy_per_train_minibatch_j")),
                _joules(x.get("energy_per_query_j")),
                _joules(x.get("energy_other_j")),
                _deadline_cell(x),
            )
        )
    return [INTERLEAVE_HEADER, *rows] if rows and header else rows
