"""Transformer encoder inference: BERT-Tiny and DistilBERT built from their configs (random
weights), each item a full 512-token sequence with its attention mask.

Skipped with the reason when transformers is not installed. Grid and skips as in
``test_classification.py``; the output is the last hidden state (batch, 512, hidden).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_edgeenergy.workloads.grid import INFERENCE_ARGS, inference_params, prepare_inference
from pytest_edgeenergy.workloads.nlp import SEQ_LEN_TOKENS

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.runner import EdgeBench

pytestmark = pytest.mark.needs_here("torch", "the benchmark suites need torch (pip install torch)")


@pytest.mark.parametrize(INFERENCE_ARGS, inference_params("nlp"))
def test_nlp(
    edge_bench: EdgeBench,
    operating_point: object,
    batch_size: int,
    workload: str,
    runtime: str,
    graph_mode: str,
    precision: str,
    device: str,
    edge_weights_dir: Path | None,
    edge_cache_dir: Path,
) -> None:
    model = prepare_inference(
        edge_bench,
        workload,
        graph_mode,
        precision,
        device,
        batch_size,
        edge_weights_dir,
        runtime=runtime,
        cache_dir=edge_cache_dir,
    )
    out = model.output
    assert out is not None and out["shape"][:2] == [batch_size, SEQ_LEN_TOKENS]
    edge_bench.run(model, items_per_call=batch_size, params=model.params(), device=device)
