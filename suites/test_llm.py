"""Causal language models: prefill and decode in separate energy windows.

Models are built from their shapes (``llm_shapes.json``: a tiny Llama, TinyLlama-1.1B,
Qwen2.5-0.5B, Phi-2, Llama-2-7B, Mistral-7B, Llama-3-8B) with random weights, or loaded
from ``--edge-weights DIR`` (``DIR/<workload>/`` model directory, ``DIR/<workload>.gguf`` for
int4 through llama.cpp). Dimensions: batch size (concurrent sequences), ``prompt_tokens``,
``new_tokens`` (``--edge-prompt-tokens``, ``--edge-new-tokens``), precision and device.

Order of refusals: ``--edge-quick`` (the tiny model in fp32 only), then the memory pre-flight
from the shape alone (before anything is built, so a model that can never fit the board says
so even where its device is missing), then what this machine lacks (CUDA, llama.cpp, a GGUF
file), then models above 100 M parameters on cpu unless ``--workload`` selects them.
Metrics and their formulas: :mod:`pytest_edgeenergy.workloads.llm_metrics`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("torch", reason="the benchmark suites need torch (pip install torch)")

from pytest_edgeenergy.workloads.grid import is_quick, phase_or_skip
from pytest_edgeenergy.workloads.llm import (
    llm_skip_reason,
    load_generator,
    local_weights,
    resolve_shape,
)
from pytest_edgeenergy.workloads.llm_grid import (
    LLM_ARGS,
    cpu_size_skip_reason,
    llm_params,
    quick_skip_reason,
)
from pytest_edgeenergy.workloads.llm_metrics import llm_metrics
from pytest_edgeenergy.workloads.llm_shapes import estimate_llm_memory, param_count
from pytest_edgeenergy.workloads.remote import in_process_only

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.runner import EdgeBench


@pytest.mark.parametrize(LLM_ARGS, llm_params())
def test_llm(
    edge_bench: EdgeBench,
    operating_point: object,
    batch_size: int,
    prompt_tokens: int,
    new_tokens: int,
    workload: str,
    precision: str,
    device: str,
    edge_weights_dir: Path | None,
) -> None:
    in_process_only(edge_bench, "the LLM suite")
    reason = quick_skip_reason(workload, precision, is_quick(edge_bench))
    if reason is not None:
        pytest.skip(reason)
    weights = local_weights(workload, edge_weights_dir, precision)
    shape = resolve_shape(workload, weights)
    estimate = estimate_llm_memory(
        shape,
        batch_size=batch_size,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        precision=precision,
        device=device,
        weights_file_bytes=weights.path.stat().st_size if weights.kind == "gguf" else None,
    )
    edge_bench.preflight(
        estimate_bytes=estimate.total_bytes,
        what=(
            f"{workload} {precision} on {device} bs{batch_size} p{prompt_tokens} "
            f"n{new_tokens} ({estimate.describe()})"
        ),
    )
    reason = llm_skip_reason(precision, device, batch_size, weights) or cpu_size_skip_reason(
        param_count(shape), device, filtered=bool(edge_bench.settings.workloads)
    )
    if reason is not None:
        pytest.skip(reason)
    gen = phase_or_skip(
        edge_bench,
        "load",
        lambda: load_generator(
            workload,
            precision=precision,
            device=device,
            batch_size=batch_size,
            prompt_tokens=prompt_tokens,
            new_tokens=new_tokens,
            weights=weights,
        ),
        device,
    )
    params: dict[str, object] = {
        "workload": workload,
        "batch_size": batch_size,
        "prompt_tokens": prompt_tokens,
        "new_tokens": new_tokens,
        "precision": precision,
        "device": device,
        "weights": weights.label,
        "weights_format": weights.kind,
        **gen.params(),
    }
    prefill = edge_bench.run(
        gen.prefill,
        items_per_call=batch_size * prompt_tokens,
        label="prefill",
        params=params,
        device=device,
    )
    decode = edge_bench.run(
        gen.decode,
        items_per_call=batch_size * (new_tokens - 1),
        label="decode",
        setup=gen.start_decode,
        params=params,
        device=device,
    )
    steps_per_repeat = decode.calls_per_repeat * (new_tokens - 1)
    assert [len(s) for s in gen.step_times_s[-len(decode.repeats) :]] == [steps_per_repeat] * len(
        decode.repeats
    )
    for m in llm_metrics(prefill, decode, batch_size=batch_size, step_times_s=gen.step_times_s):
        edge_bench.derive(m.name, m.values, unit=m.unit, formula=m.formula, trusted=m.trusted)
