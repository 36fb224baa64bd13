"""Object detection inference: SSDLite320 (MobileNet-V3-Large backbone) on 3x320x320 images.

The model's postprocess (box decoding, score threshold, top-k, batched NMS per class) runs
inside its forward in eval mode, so it is INSIDE every measured window: on a board it is
part of what a detection costs. Grid and skips as in ``test_classification.py``; int8 is
skipped with its reason (dynamic quantisation has no Linear layer to convert here).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_edgeenergy.workloads.detection import DETECTIONS_PER_IMAGE
from pytest_edgeenergy.workloads.grid import INFERENCE_ARGS, inference_params, prepare_inference

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.runner import EdgeBench

pytestmark = [
    pytest.mark.needs_here("torch", "the benchmark suites need torch (pip install torch)"),
    pytest.mark.needs_here("torchvision", "detection needs torchvision"),
]


@pytest.mark.parametrize(INFERENCE_ARGS, inference_params("detection"))
def test_detection(
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
    assert out is not None and out["images"] == batch_size
    assert {"boxes", "scores", "labels"} <= set(out["keys"])
    assert all(0 <= n <= DETECTIONS_PER_IMAGE for n in out["boxes_per_image"])
    edge_bench.run(model, items_per_call=batch_size, params=model.params(), device=device)
