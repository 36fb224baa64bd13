"""A camera stream: MobileNet-V2, one 3x224x224 frame per query, arriving 30 times a second.

Always runs in the fixed-rate scenario (``--edge-scenario=fixed-rate`` with its own
``--edge-rate`` replaces the 30/s): energy per item includes the idle time between frames,
and frames whose latency (arrival to completion, queueing included) exceeds the period are
counted as deadline misses. ``load`` is its own energy window, as in the other suites.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_edgeenergy.bench.scenarios import Scenario
from pytest_edgeenergy.workloads.grid import prepare_inference
from pytest_edgeenergy.workloads.vision import NUM_CLASSES

if TYPE_CHECKING:
    from pytest_edgeenergy.bench.runner import EdgeBench

pytestmark = [
    pytest.mark.needs_here("torch", "the benchmark suites need torch (pip install torch)"),
    pytest.mark.needs_here("torchvision", "the stream suite needs torchvision"),
]

WORKLOAD = "mobilenet_v2"
FRAMES_PER_S = 30.0
BATCH_SIZE = 1


@pytest.mark.workload(WORKLOAD)
def test_camera_stream(
    edge_bench: EdgeBench, operating_point: object, edge_weights_dir: Path | None
) -> None:
    chosen = edge_bench.settings.scenario
    stream = chosen if chosen.name == "fixed-rate" else Scenario("fixed-rate", FRAMES_PER_S)
    model = prepare_inference(
        edge_bench, WORKLOAD, "eager", "fp32", "cpu", BATCH_SIZE, edge_weights_dir
    )
    assert model.output == {"shape": [BATCH_SIZE, NUM_CLASSES]}
    result = edge_bench.run(
        model, items_per_call=BATCH_SIZE, params=model.params(), device="cpu", scenario=stream
    )
    assert result.params["scenario"] == "fixed-rate"
    assert all(r.schedule is not None for r in result.repeats)
