"""Memory footprints for the pre-flight: parameter counts match the real models, estimates
grow with batch size and training, shrink with fp16, and include the CUDA context."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_runs import needs

from pytest_edgeenergy.bench.memory import CUDA_CONTEXT_BYTES
from pytest_edgeenergy.workloads.errors import WorkloadError
from pytest_edgeenergy.workloads.memory_estimate import (
    estimate_workload_bytes,
    leaf_output_bytes,
    tensor_bytes,
    workload_footprint,
)

pytestmark = [
    needs("torch", "torchvision", reason="memory footprints need torch and torchvision"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def test_footprint_params_match_the_built_model() -> None:
    from pytest_edgeenergy.workloads.vision import build_classifier

    fp = workload_footprint("resnet18")
    assert fp.params == sum(p.numel() for p in build_classifier("resnet18").parameters())
    assert fp.method == "meta-probe" and not fp.training
    # the largest ResNet-18 layer output at 224 px: 64 x 112 x 112 fp32 (conv1)
    assert fp.activation_bytes_per_item >= 3 * 64 * 112 * 112 * 4


def test_leaf_outputs_are_measured_on_the_meta_device() -> None:
    import torch

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        sizes = leaf_output_bytes(model, torch.empty(3, 8))
    assert sizes == [3 * 16 * 4, 3 * 16 * 4, 3 * 2 * 4]
    assert tensor_bytes({"a": torch.zeros(2, dtype=torch.float16), "b": [torch.zeros(3)]}) == 16


@settings(max_examples=25, deadline=None)
@given(
    workload=st.sampled_from(["alexnet", "mobilenet_v2", "ssdlite320", "lstm_lm_train"]),
    batch=st.integers(1, 256),
)
def test_estimates_grow_with_batch_size(workload: str, batch: int) -> None:
    small = estimate_workload_bytes(workload, batch)
    bigger = estimate_workload_bytes(workload, batch + 1)
    assert 0 < small < bigger
    assert small > workload_footprint(workload).params * 4  # at least the fp32 weights


def test_precision_device_and_training_change_the_estimate() -> None:
    fp32 = estimate_workload_bytes("mobilenet_v2", 32)
    assert estimate_workload_bytes("mobilenet_v2", 32, precision="fp16", device="cuda") < (
        fp32 + CUDA_CONTEXT_BYTES
    )
    assert estimate_workload_bytes("mobilenet_v2", 32, device="cuda") == fp32 + CUDA_CONTEXT_BYTES
    assert estimate_workload_bytes("mobilenet_v2", 32, precision="int8") > fp32
    assert estimate_workload_bytes("resnet18_train", 16) > 2 * estimate_workload_bytes(
        "resnet18", 16
    )
    with pytest.raises(WorkloadError, match="batch_size"):
        estimate_workload_bytes("resnet18", 0)


def test_nlp_footprint_counts_attention() -> None:
    pytest.importorskip("transformers", reason="NLP workloads need transformers")
    fp = workload_footprint("distilbert")
    assert fp.method == "analytic" and fp.params > 60_000_000
    assert fp.activation_bytes_per_item >= 2 * 12 * 512 * 512 * 4  # scores + probabilities
