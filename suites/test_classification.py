"""Image classification inference: AlexNet, ResNet-18 and MobileNet-V2 on 3x224x224 images.

Grid: workload x runtime (torch in graph modes eager, torchscript, compile; onnxruntime and
tensorrt on the exported ONNX graph) x precision (fp32, fp16, int8) x device (cpu, cuda),
times the batch sizes and operating points the options ask for. A combination that cannot
run here is skipped with its reason. ``load`` is its own energy window (build, local
weights, conversion or export + session, first call); then the steady state is measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_edgeenergy.workloads.grid import INFERENCE_ARGS, inference_params, prepare_inference
from pytest_edgeenergy.workloads.vision import NUM_CLASSES

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.runner import EdgeBench

pytestmark = [
    pytest.mark.needs_here("torch", "the benchmark suites need torch (pip install torch)"),
    pytest.mark.needs_here("torchvision", "classification needs torchvision"),
]


@pytest.mark.parametrize(INFERENCE_ARGS, inference_params("classification"))
def test_classification(
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
    assert model.output == {"shape": [batch_size, NUM_CLASSES]}
    edge_bench.run(model, items_per_call=batch_size, params=model.params(), device=device)
