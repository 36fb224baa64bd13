"""The runtime in report keys: part of the key, and a result naming no runtime (reports
written before the runtime dimension) is a torch result."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.report.keys import join_key, params_key

OLD_TORCH = {
    "workload": "resnet18",
    "batch_size": 8,
    "graph_mode": "eager",
    "precision": "fp32",
    "device": "cpu",
    "input": "3x224x224 image",
    "weights": "random",
    "model_params": 11689512,
    "load_includes_first_call": True,
}
ID = "suites/test_classification.py::test_classification[bs8-dvfs-resnet18-eager-fp32-cpu]"


def _entry(params: dict[str, Any], test_id: str = ID) -> dict[str, Any]:
    return {"id": test_id, "params": params}


def test_a_result_without_runtime_is_a_torch_result() -> None:
    new_torch = {**OLD_TORCH, "runtime": "torch"}
    assert join_key(_entry(OLD_TORCH)) == join_key(_entry(new_torch))
    assert "runtime" not in params_key(new_torch)


def test_the_runtime_is_part_of_the_key() -> None:
    ort = {
        **OLD_TORCH,
        "graph_mode": "onnx",
        "runtime": "onnxruntime",
        "provider": "CPUExecutionProvider",
    }
    ort_id = ID.replace("eager-fp32", "onnxruntime-fp32")
    key = join_key(_entry(ort, ort_id))
    assert key != join_key(_entry(OLD_TORCH))
    assert "runtime=onnxruntime" in key.params and "provider=CPUExecutionProvider" in key.params
    # same graph mode and test id, another runtime: still another experiment
    trt = {**ort, "runtime": "tensorrt"}
    assert join_key(_entry(trt, ort_id)) != key


@given(cache=st.sampled_from(["hit", "miss"]), opset=st.integers(min_value=7, max_value=30))
def test_how_the_export_went_is_not_part_of_the_key(cache: str, opset: int) -> None:
    ort = {**OLD_TORCH, "graph_mode": "onnx", "runtime": "onnxruntime"}
    observed = {**ort, "export_cache": cache, "onnx_opset": opset}
    assert join_key(_entry(observed)) == join_key(_entry(ort))
