"""Runtimes besides torch: what can run where (skip reasons), providers, the ONNX export and
its cache, ONNX Runtime sessions, and the runtime dimension of the inference grid."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_edgeenergy.workloads.errors import CombinationUnsupported, WorkloadError
from pytest_edgeenergy.workloads.grid import (
    INFERENCE_ARGS,
    inference_id,
    inference_params,
    skip_reason,
)
from pytest_edgeenergy.workloads.modes import DEVICES, GRAPH_MODES, PRECISIONS
from pytest_edgeenergy.workloads.runtimes import (
    MODEL_FILE,
    cache_key,
    cached_onnx,
    provider_for,
    runtime_supported,
    weights_identity,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _needs_onnx() -> None:
    pytest.importorskip("torch", reason="needs torch")
    pytest.importorskip("torchvision", reason="needs torchvision")
    for module in ("onnxruntime", "onnx", "onnxscript"):
        pytest.importorskip(module, reason="needs the [onnx] extra")


# -- what runs where -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime", "device", "provider"),
    [
        ("onnxruntime", "cpu", "CPUExecutionProvider"),
        ("onnxruntime", "cuda", "CUDAExecutionProvider"),
        ("tensorrt", "cuda", "TensorrtExecutionProvider"),
    ],
)
def test_provider_of_each_runtime_and_device(runtime: str, device: str, provider: str) -> None:
    assert provider_for(runtime, device) == provider


def test_tensorrt_has_no_cpu_provider() -> None:
    with pytest.raises(CombinationUnsupported, match="tensorrt runs on cuda only"):
        provider_for("tensorrt", "cpu")


@pytest.mark.parametrize(
    ("runtime", "precision", "device", "words"),
    [
        ("onnxruntime", "fp16", "cpu", ("fp16", "cuda only")),
        ("onnxruntime", "int8", "cuda", ("int8", "TensorRT", "calibration")),
        ("tensorrt", "fp32", "cpu", ("tensorrt runs on cuda only",)),
        ("tensorrt", "int8", "cuda", ("tensorrt offers fp32, fp16", "not int8")),
    ],
)
def test_combinations_that_run_nowhere_say_why(
    runtime: str, precision: str, device: str, words: tuple[str, ...]
) -> None:
    ok, reason = runtime_supported("resnet18", runtime, precision, device)
    assert not ok
    assert all(w in reason for w in words), reason


def test_training_workloads_have_no_other_runtime() -> None:
    ok, reason = runtime_supported("resnet18_train", "onnxruntime", "fp32", "cpu")
    assert not ok and "inference only" in reason


def test_missing_onnxruntime_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch", reason="needs torch")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    ok, reason = runtime_supported("resnet18", "onnxruntime", "fp32", "cpu")
    assert not ok
    assert "onnxruntime" in reason and "pytest-edgeenergy[onnx]" in reason


def test_tensorrt_without_a_gpu_is_a_skip_with_the_reason() -> None:
    _needs_onnx()
    import torch

    ok, reason = runtime_supported("resnet18", "tensorrt", "fp16", "cuda")
    if torch.cuda.is_available():
        import onnxruntime  # type: ignore[import-untyped]

        has_trt = "TensorrtExecutionProvider" in onnxruntime.get_available_providers()
        assert ok == has_trt and (ok or "TensorrtExecutionProvider" in reason)
    else:
        assert not ok and "cuda" in reason and "is_available() is False" in reason


def test_unknown_names_are_errors_not_skips() -> None:
    with pytest.raises(WorkloadError, match=r"runtime 'tflite'.*onnxruntime, tensorrt"):
        runtime_supported("resnet18", "tflite", "fp32", "cpu")
    with pytest.raises(WorkloadError, match="workload 'resnet19'"):
        runtime_supported("resnet19", "onnxruntime", "fp32", "cpu")


# -- the grid --------------------------------------------------------------------------


def test_torch_ids_are_unchanged_and_runtimes_get_their_own() -> None:
    params = inference_params("classification")
    ids = [p.id for p in params]
    assert INFERENCE_ARGS.split(",") == ["workload", "runtime", "graph_mode", "precision", "device"]
    torch_ids = [p.id for p in params if p.values[1] == "torch"]
    assert len(torch_ids) == 3 * len(GRAPH_MODES) * len(PRECISIONS) * len(DEVICES)
    assert "resnet18-eager-fp32-cpu" in torch_ids  # what baselines of earlier runs hold
    assert {"resnet18-onnxruntime-fp32-cpu", "resnet18-onnxruntime-int8-cpu"} <= set(ids)
    assert "resnet18-tensorrt-fp16-cuda" in ids
    assert not any(i.startswith("resnet18-tensorrt") and i.endswith("-cpu") for i in ids)
    assert len(ids) == len(set(ids))
    for p in params:
        assert inference_id(*p.values) == p.id
        assert p.values[1] == "torch" or p.values[2] == "onnx"
        (mark,) = [m for m in p.marks if m.name == "workload"]
        assert mark.args == (p.values[0],)


def test_quick_keeps_torch_eager_and_onnxruntime_fp32() -> None:
    _needs_onnx()
    assert skip_reason("resnet18", "eager", "fp32", "cpu", quick=True) is None
    assert skip_reason("resnet18", "onnx", "fp32", "cpu", quick=True, runtime="onnxruntime") is None
    reason = skip_reason("resnet18", "onnx", "int8", "cpu", quick=True, runtime="onnxruntime")
    assert reason is not None and "--edge-quick" in reason and "onnxruntime int8" in reason
    assert skip_reason("resnet18", "onnx", "int8", "cpu", runtime="onnxruntime") is None


# -- the cache ---------------------------------------------------------------------------


def test_cache_key_changes_with_what_shapes_the_graph(tmp_path: Path) -> None:
    base = cache_key("resnet18", "fp32", "cpu", 8, "random")
    assert base.startswith("resnet18-fp32-cpu-bs8-")
    assert base == cache_key("resnet18", "fp32", "cpu", 8, "random")
    others = {
        cache_key("resnet18", "fp32", "cpu", 4, "random"),
        cache_key("resnet18", "fp16", "cuda", 8, "random"),
        cache_key("resnet18", "int8", "cpu", 8, "random"),
        cache_key("resnet18", "fp32", "cpu", 8, "/w/resnet18.pt:10:1"),
    }
    assert base not in others and len(others) == 4
    assert weights_identity(None, "resnet18") == "random"
    assert weights_identity(tmp_path, "resnet18") == "random"  # no file for it
    (tmp_path / "resnet18.pt").write_bytes(b"x" * 10)
    assert weights_identity(tmp_path, "resnet18").endswith(
        ":10:" + str((tmp_path / "resnet18.pt").stat().st_mtime_ns)
    )


def test_cache_makes_once_and_remembers_a_refusal(tmp_path: Path) -> None:
    made: list[Path] = []

    def make(path: Path) -> dict[str, object]:
        made.append(path)
        path.write_bytes(b"onnx")
        return {"onnx_opset": 20}

    path, facts, hit = cached_onnx(tmp_path, "k1", make)
    assert (hit, facts, path.read_bytes(), path.name) == (
        False,
        {"onnx_opset": 20},
        b"onnx",
        MODEL_FILE,
    )
    again = cached_onnx(tmp_path, "k1", make)
    assert again == (path, facts, True) and len(made) == 1

    def refuse(path: Path) -> dict[str, object]:
        made.append(path)
        raise CombinationUnsupported("exporter says no: data-dependent shape")

    for _ in range(2):
        with pytest.raises(CombinationUnsupported, match="exporter says no"):
            cached_onnx(tmp_path, "k2", refuse)
    assert len(made) == 2  # the refusal was made once, then read back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1", "k2.refused.txt"]  # no leftovers


# -- export and sessions ---------------------------------------------------------------


def test_onnxruntime_output_equals_torch_for_resnet18_fp32(tmp_path: Path) -> None:
    _needs_onnx()
    import numpy as np
    import torch

    from pytest_edgeenergy.workloads.inference import load_inference
    from pytest_edgeenergy.workloads.runtimes import export_onnx, ort_session, session_runner

    torch.manual_seed(0)
    model = load_inference("resnet18", batch_size=2, first_call=False)
    with torch.inference_mode():
        expected = model().numpy()
    facts = export_onnx(model.model, model.inputs, tmp_path / "m.onnx")
    assert isinstance(facts["onnx_opset"], int) and facts["onnx_opset"] >= 17
    session = ort_session(tmp_path / "m.onnx", "CPUExecutionProvider", "fp32")
    assert session.get_providers() == ["CPUExecutionProvider"]
    (got,) = session_runner(session, model.inputs, "cpu")()
    assert got.shape == expected.shape == (2, 1000)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)


def test_load_runtime_caches_the_export_and_records_runtime_and_provider(
    tmp_path: Path,
) -> None:
    _needs_onnx()
    from pytest_edgeenergy.workloads.runtimes import load_runtime

    first = load_runtime("bert_tiny", runtime="onnxruntime", batch_size=1, cache_dir=tmp_path)
    assert first.output == {"shape": [1, 512, 128]}
    params = first.params()
    assert params["runtime"] == "onnxruntime" and params["provider"] == "CPUExecutionProvider"
    assert (params["graph_mode"], params["precision"], params["device"]) == ("onnx", "fp32", "cpu")
    assert params["export_cache"] == "miss" and params["weights"] == "random"
    assert params["model_params"] == first.facts["model_params"] > 0
    second = load_runtime("bert_tiny", runtime="onnxruntime", batch_size=1, cache_dir=tmp_path)
    assert second.params()["export_cache"] == "hit"
    assert second.params()["model_params"] == params["model_params"]
    assert [p.name.split("-bs")[0] for p in tmp_path.iterdir()] == ["bert_tiny-fp32-cpu"]


def test_int8_is_onnxruntime_dynamic_quantisation(tmp_path: Path) -> None:
    _needs_onnx()
    from pytest_edgeenergy.workloads.runtimes import load_runtime

    model = load_runtime(
        "bert_tiny", runtime="onnxruntime", precision="int8", batch_size=1, cache_dir=tmp_path
    )
    assert model.output == {"shape": [1, 512, 128]}
    assert "quantize_dynamic" in str(model.params()["quantization"])
    sizes = {
        p.name.split("-")[1]: sum(f.stat().st_size for f in p.iterdir()) for p in tmp_path.iterdir()
    }
    assert set(sizes) == {"fp32", "int8"}
    assert sizes["int8"] < 0.5 * sizes["fp32"]  # int8 weights: a quarter of fp32's bytes


def test_a_model_the_exporter_refuses_is_unsupported_with_the_exporters_reason(
    tmp_path: Path,
) -> None:
    _needs_onnx()
    import torch

    from pytest_edgeenergy.workloads.runtimes import export_onnx

    class DataDependentLoop(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(int(x.sum().item())):  # as SSD's postprocess: data decides
                x = x * 2
            return x

    with pytest.raises(CombinationUnsupported) as info:
        export_onnx(DataDependentLoop(), (torch.ones(3),), tmp_path / "m.onnx")
    reason = info.value.reason
    assert reason.startswith("torch.onnx.export(dynamo=True) cannot export DataDependentLoop: ")
    assert "TorchExportError" in reason and "GuardOnDataDependentSymNode" in reason
    assert "\n" not in reason and "\x1b" not in reason and "Next steps" not in reason
