"""Which metric names a report can hold, and did-you-mean hints for the ones it cannot.

The plugin writes the metrics of :data:`~.model.METRIC_UNITS` and a few with their own unit
(:data:`OTHER_METRICS`), per-rail energy as ``energy_j.RAIL``, and the same names prefixed
``LABEL.`` for other windows, runs and phases (``load.energy_j``, ``bs64.latency_p90``).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

from pytest_edgeenergy.report.model import HIGHER_IS_BETTER, METRIC_UNITS
from pytest_edgeenergy.report.windows import WINDOW_METRICS

SCENARIO_METRICS = frozenset({"idle_fraction", "deadline_misses", "deadline_miss_fraction"})
"""What a load scenario adds (``bench/scenarios.py``: fixed-rate, server, single-stream)."""

LLM_METRICS = frozenset(
    {
        "energy_per_prefill_token_j",
        "energy_per_prefill_token_net_j",
        "energy_per_decode_token_j",
        "energy_per_decode_token_net_j",
        "energy_per_request_j",
        "energy_per_request_net_j",
        "time_to_first_token_s",
        "decode_tokens_per_s",
        "latency_per_output_token_p50_s",
        "latency_per_output_token_p90_s",
    }
)
"""What the LLM suite derives from its prefill and decode windows (``workloads/llm_metrics.py``
holds their units and formulas; a test keeps the two lists equal)."""

OTHER_METRICS = (
    frozenset({"duration_s", "memory_board_used", "memory_cuda_peak"})
    | SCENARIO_METRICS
    | LLM_METRICS
)
"""Metrics the plugin records with an explicit unit (not in :data:`~.model.METRIC_UNITS`)."""

KNOWN_METRICS = frozenset(METRIC_UNITS) | OTHER_METRICS

RAIL_METRIC = "energy_j"
"""``energy_j.RAIL``: the energy of one rail."""

WINDOW_COUNTERPARTS = {
    "energy_per_item": "energy_j",
    "energy_per_item_net": "energy_net_j",
    "latency_mean": "duration_s",
    "latency_p50": "duration_s",
    "latency_p90": "duration_s",
    "latency_p99": "duration_s",
}
"""What a window carries (an ``energy`` fixture test's metrics, :data:`.windows.WINDOW_METRICS`)
in place of an ``edge_bench`` figure per item or per call: the window's energy and length."""


def possible(name: str, known: Collection[str] = KNOWN_METRICS) -> bool:
    """True when the plugin can record a metric called ``name``: a ``known`` metric, or
    ``energy_j.RAIL``, either behind any ``LABEL.`` prefixes."""
    parts = name.split(".")
    if "" in parts:
        return False
    for i, part in enumerate(parts):
        if ".".join(parts[i:]) in known:
            return True
        if part == RAIL_METRIC and i < len(parts) - 1:
            return True
    return False


def higher_is_better(name: str) -> bool:
    """True when a larger value of metric ``name`` is an improvement (``throughput``, also
    behind a label: ``bs64.throughput``); for every other metric lower is better."""
    return name.rpartition(".")[2] in HIGHER_IS_BETTER


def suggestion(name: str, candidates: Collection[str], *, labelled: bool = False) -> str | None:
    """The name closest to ``name``: of ``candidates``, or with ``labelled`` (the candidates
    are bare names) the ``LABEL.`` prefix of ``name`` before the candidate closest to its
    last part; None when nothing is close."""

    def close(word: str) -> str | None:
        found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
        return found[0] if found else None

    if labelled and "." in name:
        prefix, _, last = name.rpartition(".")
        found = close(last)
        if found is not None:
            return f"{prefix}.{found}"
    return close(name)


def _hint(found: str | None) -> str:
    return f" (did you mean {found!r}?)" if found is not None else ""


def did_you_mean(name: str, candidates: Collection[str], *, labelled: bool = False) -> str:
    """`` (did you mean 'x'?)`` or an empty string."""
    return _hint(suggestion(name, candidates, labelled=labelled))


def counterpart(name: str) -> str | None:
    """The window figure in place of the ``edge_bench`` metric ``name``, its ``LABEL.``
    prefix kept (``load.energy_per_item`` -> ``load.energy_j``), or None."""
    prefix, dot, last = name.rpartition(".")
    found = WINDOW_COUNTERPARTS.get(last)
    return None if found is None else prefix + dot + found


def carried_hint(name: str, carried: Collection[str]) -> str:
    """`` (did you mean 'x'?)`` for a metric ``name`` that results carrying ``carried``
    lack: its window :func:`counterpart` when they carry that, else the closest name."""
    found = counterpart(name)
    return _hint(found) if found in carried else did_you_mean(name, carried)


WINDOWS_CARRY = (
    f"whose windows carry {', '.join(WINDOW_METRICS)} and {RAIL_METRIC}.RAIL (prefixed LABEL. "
    "for a test's second and later window labels: load.energy_j); figures per item and "
    "latencies need edge_bench"
)
"""What the ``energy`` fixture carries, for messages saying a test uses it."""


def window_problem(name: str) -> str | None:
    """``'energy_per_item' (did you mean 'energy_j'?)`` when a test measuring with the
    ``energy`` fixture alone (:data:`WINDOWS_CARRY`) cannot carry a metric ``name``, else
    None."""
    if possible(name, WINDOW_METRICS):
        return None
    found = counterpart(name)
    return f"{name!r}{_hint(found) if found else did_you_mean(name, WINDOW_METRICS, labelled=True)}"


def name_problem(name: str) -> str | None:
    """Why no result can carry a metric ``name`` (with a did-you-mean), or None."""
    if possible(name):
        return None
    return (
        f"no result can carry a metric named {name!r}"
        f"{did_you_mean(name, KNOWN_METRICS, labelled=True)}; "
        f"known metrics: {', '.join(sorted(KNOWN_METRICS))}, energy_j.RAIL, "
        "and each behind a LABEL. prefix (load.energy_j)"
    )
