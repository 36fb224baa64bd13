"""The LLM suite's metrics, derived per repeat from its ``prefill`` and ``decode`` runs, each
with the exact formula the report carries (``extra.formulas``): published J/token figures
disagree on whether prefill and idle are included, so every figure says what it counts.

Per repeat i (repeat i of the prefill run is paired with repeat i of the decode run):
``E`` is a window's gross energy, ``E_net`` the same less the idle power x its duration;
a prefill call processes ``batch`` prompts of ``prompt_tokens`` and yields each sequence's
first token; a decode call makes ``new_tokens - 1`` greedy steps, each one token per
sequence, from a freshly prefilled cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..bench.stats import summarize_latencies

if TYPE_CHECKING:
    from ..bench.result import BenchResult, RepeatResult

ENERGY_WINDOW = "E = gross energy of the window (J), E_net = E - idle power x window duration"

FORMULAS: dict[str, str] = {
    "energy_per_prefill_token_j": (
        "E(prefill window) / (prefill calls x batch x prompt_tokens)  [J/token, gross]"
    ),
    "energy_per_prefill_token_net_j": (
        "E_net(prefill window) / (prefill calls x batch x prompt_tokens)  [J/token, net of idle]"
    ),
    "energy_per_decode_token_j": (
        "E(decode window) / (decode calls x batch x (new_tokens - 1))  [J/token, gross; "
        "prefill excluded: the first new token comes from the prefill]"
    ),
    "energy_per_decode_token_net_j": (
        "E_net(decode window) / (decode calls x batch x (new_tokens - 1))  "
        "[J/token, net of idle; prefill excluded]"
    ),
    "energy_per_request_j": (
        "E(prefill window) / (prefill calls x batch) + E(decode window) / (decode calls x "
        "batch)  [J/request, gross: one sequence's prefill of prompt_tokens plus its "
        "new_tokens - 1 decode steps]"
    ),
    "energy_per_request_net_j": (
        "E_net(prefill window) / (prefill calls x batch) + E_net(decode window) / "
        "(decode calls x batch)  [J/request, net of idle]"
    ),
    "time_to_first_token_s": (
        "mean over the prefill window's calls of one call's wall time (forward pass of "
        "batch prompts of prompt_tokens + argmax of the first new token)  [s]"
    ),
    "decode_tokens_per_s": (
        "decode calls x batch x (new_tokens - 1) / decode window duration  "
        "[tokens/s, all sequences together]"
    ),
    "latency_per_output_token_p50_s": (
        "median over the decode window's steps of one step's wall time (one forward pass "
        "with the KV cache + argmax, one token for each of batch sequences)  [s]"
    ),
    "latency_per_output_token_p90_s": (
        "90th percentile (linear interpolation) over the decode window's steps of one "
        "step's wall time  [s]"
    ),
}
UNITS: dict[str, str] = {
    "energy_per_prefill_token_j": "J/token",
    "energy_per_prefill_token_net_j": "J/token",
    "energy_per_decode_token_j": "J/token",
    "energy_per_decode_token_net_j": "J/token",
    "energy_per_request_j": "J/request",
    "energy_per_request_net_j": "J/request",
    "time_to_first_token_s": "s",
    "decode_tokens_per_s": "tokens/s",
    "latency_per_output_token_p50_s": "s",
    "latency_per_output_token_p90_s": "s",
}


@dataclass(frozen=True)
class LlmMetric:
    """One derived metric: the arguments of ``edge_bench.derive``."""

    name: str
    values: tuple[float | None, ...]
    unit: str
    formula: str
    trusted: bool


def _per_sequence(e: float | None, rep: RepeatResult, batch_size: int) -> float | None:
    return e / (rep.calls * batch_size) if e is not None and rep.calls > 0 else None


def _sum(a: float | None, b: float | None) -> float | None:
    return a + b if a is not None and b is not None else None


def _per(e: float | None, n: int) -> float | None:
    return e / n if e is not None and n > 0 else None


def llm_metrics(
    prefill: BenchResult,
    decode: BenchResult,
    *,
    batch_size: int,
    step_times_s: Sequence[Sequence[float]],
) -> list[LlmMetric]:
    """The metrics of :data:`FORMULAS` from the two runs; ``step_times_s`` holds the decode
    step times of each decode repeat (the last ``len(decode.repeats)`` lists are used:
    earlier ones belong to the warm-up). Items of the runs are tokens: prefill
    ``batch x prompt_tokens`` per call, decode ``batch x (new_tokens - 1)`` per call."""
    pre, dec = prefill.repeats, decode.repeats
    if len(pre) != len(dec):
        raise ValueError(
            f"prefill has {len(pre)} repeats and decode {len(dec)}: they are paired by index"
        )
    steps = list(step_times_s)[-len(dec) :] if dec else []
    if len(steps) != len(dec):
        raise ValueError(f"{len(steps)} lists of decode step times for {len(dec)} repeats")
    step_lat = [summarize_latencies(s) for s in steps]
    values: dict[str, list[float | None]] = {
        "energy_per_prefill_token_j": [_per(r.energy_j, r.items) for r in pre],
        "energy_per_prefill_token_net_j": [_per(r.net_energy_j, r.items) for r in pre],
        "energy_per_decode_token_j": [_per(r.energy_j, r.items) for r in dec],
        "energy_per_decode_token_net_j": [_per(r.net_energy_j, r.items) for r in dec],
        "energy_per_request_j": [
            _sum(_per_sequence(p.energy_j, p, batch_size), _per_sequence(d.energy_j, d, batch_size))
            for p, d in zip(pre, dec, strict=True)
        ],
        "energy_per_request_net_j": [
            _sum(
                _per_sequence(p.net_energy_j, p, batch_size),
                _per_sequence(d.net_energy_j, d, batch_size),
            )
            for p, d in zip(pre, dec, strict=True)
        ],
        "time_to_first_token_s": [r.latency.mean_s if r.latency is not None else None for r in pre],
        "decode_tokens_per_s": [r.throughput for r in dec],
        "latency_per_output_token_p50_s": [s.p50_s if s else None for s in step_lat],
        "latency_per_output_token_p90_s": [s.p90_s if s else None for s in step_lat],
    }
    trusted = {
        "prefill": prefill.valid,
        "decode": decode.valid,
        "both": prefill.valid and decode.valid,
    }
    source = {
        "energy_per_prefill_token_j": "prefill",
        "energy_per_prefill_token_net_j": "prefill",
        "energy_per_decode_token_j": "decode",
        "energy_per_decode_token_net_j": "decode",
        "energy_per_request_j": "both",
        "energy_per_request_net_j": "both",
    }
    return [
        LlmMetric(
            name,
            tuple(vals),
            UNITS[name],
            f"{FORMULAS[name]}; {ENERGY_WINDOW}" if name in source else FORMULAS[name],
            trusted[source[name]] if name in source else True,
        )
        for name, vals in values.items()
    ]
