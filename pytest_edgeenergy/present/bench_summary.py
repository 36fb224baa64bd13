"""The benchmark table of the terminal summary: one row per ``edge_bench.run``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..bench.result import BenchResult

__all__ = [
    "SUMMARY_HEADER",
    "deadline_text",
    "format_rows",
    "paced",
    "summary_rows",
    "validity_cell",
]

SUMMARY_HEADER = (
    "workload",
    "config",
    "batch",
    "operating point",
    "J/item",
    "latency p90",
    "items/s",
    "validity",
)


def _si(x: float | None, unit: str) -> str:
    """``0.0123`` J -> ``12.30 mJ``: three significant-ish digits with an SI prefix."""
    if x is None:
        return "-"
    for scale, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "u")):
        # 0.9996 J is "1 J": three digits of 999.6 mJ would read "1e+03 mJ".
        if abs(x) >= scale * (1 - 5e-4):
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x / 1e-9:.3g} n{unit}"


def _energy(j: float | None) -> str:
    return _si(j, "J")


def _latency(s: float | None) -> str:
    return _si(s, "s")


def _rate(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def summary_rows(results: Iterable[BenchResult], *, header: bool = True) -> list[tuple[str, ...]]:
    """Rows of (workload (and ``[label]`` for a run not labelled ``steady``: an LLM's
    ``[prefill]`` and ``[decode]``), config (graph mode/precision/device; a runtime other
    than torch in place of its graph mode; a load scenario other than offline after it:
    ``fixed-rate@30/s``; an interleaved test's scheduler: ``alternating@10/s``), batch,
    operating point, J/item, latency p90, items/s, validity);
    the header first unless ``header=False``. An invalid run shows ``INVALID: reason``; a
    run with a deadline adds its late queries (:func:`validity_cell`)."""
    rows: list[tuple[str, ...]] = [SUMMARY_HEADER] if header else []
    for r in results:
        m = r.metrics()
        runtime = r.params.get("runtime")
        graph = runtime if runtime not in (None, "torch") else r.params.get("graph_mode")
        parts = (graph, r.params.get("precision"), r.params.get("device"))
        config = "/".join(str(x) for x in (*parts[:2], parts[2] or r.device) if x)
        scenario = r.params.get("scenario")
        if scenario not in (None, "offline"):
            config += f" {paced(scenario, r.params.get('rate_hz'))}"
        scheduler = r.params.get("scheduler")
        if scheduler is not None:  # training and inference interleaved
            config += f" {paced(scheduler, r.params.get('rate_qps'))}"
        rows.append(
            (
                r.workload if r.label == "steady" else f"{r.workload} [{r.label}]",
                config or "-",
                str(r.batch_size),
                r.operating_point,
                _energy(m["energy_per_item"]["value"]),
                _latency(m["latency_p90"]["value"]),
                _rate(m["throughput"]["value"]),
                validity_cell(r),
            )
        )
    return rows


def paced(name: object, rate_per_s: object) -> str:
    """``fixed-rate@30/s``: a load scenario or a scheduler and its rate, when it has one."""
    rate = rate_per_s if isinstance(rate_per_s, int | float) else None
    return f"{name}" + (f"@{rate:g}/s" if rate is not None else "")


def validity_cell(r: BenchResult) -> str:
    """``valid`` or ``INVALID: reason``; for a run with a deadline (a load scenario), then
    its queries late over all repeats: ``valid; deadline 33.3 ms: 48/48 queries late (NOT
    MET)``. A run meets its deadline when every repeat does (at most
    :data:`~..bench.scenarios.ALLOWED_MISS_FRACTION` of its queries late)."""
    text = "valid" if r.valid else f"INVALID: {r.invalid_reason}"
    late = deadline_text(r)
    return f"{text}; {late}" if late else text


def deadline_text(r: BenchResult) -> str | None:
    """``deadline 33.3 ms: 48/48 queries late (NOT MET)``; None without a deadline."""
    schedules = [s for s in (rep.schedule for rep in r.repeats) if s is not None]
    judged = [s for s in schedules if s.misses is not None]
    deadline_s = judged[0].scenario.deadline_s if judged else None
    if deadline_s is None:
        return None
    late = sum(s.misses or 0 for s in judged)
    queries = sum(s.queries for s in judged)
    met = all(s.met for s in judged)
    return f"deadline {_latency(deadline_s)}: {late}/{queries} queries late" + (
        "" if met else " (NOT MET)"
    )


def format_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as aligned text lines (the last column is not padded)."""
    if not rows:
        return []
    width = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(width - 1)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in rows
    ]
