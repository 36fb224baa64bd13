"""Training steps: ResNet-18 and MobileNet-V3-Small on JPEGs decoded and augmented by a
DataLoader (the user's ``--edge-data`` ImageFolder, else cached synthetic JPEGs), and a
2-layer LSTM language model (8.6 M parameters) on random tokens.

Each measured call is one minibatch of ``batch_size`` items. Besides energy, the result's
``params.training_timing`` holds the study's breakdown: per-minibatch fetch stall, compute
and end-to-end time, first minibatch discarded, epoch 0 apart from epochs 1+. Training runs
eager fp32; other graph modes and precisions are skipped with the reason. Training always
runs offline (back to back): ``--edge-scenario`` paces the inference suites only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_edgeenergy.bench.scenarios import OFFLINE
from pytest_edgeenergy.workloads.grid import (
    COMBINATION_ARGS,
    check_and_preflight,
    combination_params,
    prepare_training,
)

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.runner import EdgeBench

pytestmark = pytest.mark.needs_here("torch", "the benchmark suites need torch (pip install torch)")


@pytest.mark.parametrize(COMBINATION_ARGS, combination_params("training"))
def test_training(
    edge_bench: EdgeBench,
    operating_point: object,
    batch_size: int,
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    edge_weights_dir: Path | None,
    edge_data_dir: Path | None,
    edge_cache_dir: Path,
) -> None:
    check_and_preflight(edge_bench, workload, graph_mode, precision, device, batch_size)
    step = prepare_training(
        edge_bench,
        workload,
        batch_size,
        device,
        data_dir=edge_data_dir,
        cache_dir=edge_cache_dir,
        weights_dir=edge_weights_dir,
    )
    try:
        # Offline whatever --edge-scenario says: a training step serves no queries to pace.
        result = edge_bench.run(
            step,
            items_per_call=batch_size,
            params=step.params(),
            device=device,
            scenario=OFFLINE,
        )
    finally:
        step.close()
    timing = step.timing()
    result.params["training_timing"] = timing
    assert timing["first_minibatch_discarded"] and timing["minibatches_run"] >= 2
