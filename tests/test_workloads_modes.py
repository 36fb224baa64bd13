"""Graph mode / precision / device: what can run here, skip reasons, conversions, the grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_edgeenergy.workloads.errors import CombinationUnsupported, WorkloadError
from pytest_edgeenergy.workloads.grid import (
    COMBINATION_ARGS,
    combination_id,
    combination_params,
    skip_reason,
)
from pytest_edgeenergy.workloads.modes import (
    DEVICES,
    GRAPH_MODES,
    PRECISIONS,
    combination_supported,
    cxx_compiler,
)
from pytest_edgeenergy.workloads.registry import WORKLOADS, workload_names, workload_spec

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_fp16_on_cpu_is_skipped_with_reason() -> None:
    ok, reason = combination_supported("resnet18", "eager", "fp16", "cpu")
    assert not ok
    assert "fp16" in reason and "cuda" in reason


def test_int8_on_cuda_is_skipped_with_reason_even_without_a_gpu() -> None:
    ok, reason = combination_supported("bert_tiny", "eager", "int8", "cuda")
    assert not ok
    assert "int8" in reason and "CPU kernels only" in reason


@pytest.mark.parametrize("graph_mode", ["torchscript", "compile"])
def test_training_runs_eager_only(graph_mode: str) -> None:
    ok, reason = combination_supported("resnet18_train", graph_mode, "fp32", "cpu")
    assert not ok and "eager" in reason and graph_mode in reason


def test_int8_skipped_for_a_model_without_linear_layers() -> None:
    ok, reason = combination_supported("ssdlite320", "eager", "int8", "cpu")
    assert not ok and "Linear" in reason


def test_unknown_names_are_errors_not_skips() -> None:
    with pytest.raises(WorkloadError, match="resnet19"):
        combination_supported("resnet19", "eager", "fp32", "cpu")
    with pytest.raises(WorkloadError, match=r"graph mode 'onnx'.*eager, torchscript, compile"):
        combination_supported("resnet18", "onnx", "fp32", "cpu")
    with pytest.raises(ValueError, match="precision 'bf16'"):
        combination_supported("resnet18", "eager", "bf16", "cpu")
    with pytest.raises(ValueError, match="device 'tpu'"):
        combination_supported("resnet18", "eager", "fp32", "tpu")


def test_every_workload_spec_is_reachable_by_name_and_kind() -> None:
    for name, spec in WORKLOADS.items():
        assert workload_spec(name) is spec
        assert name in workload_names(spec.kind)
        assert "-" not in name  # ids join fields with '-'


def test_grid_ids_are_readable_unique_and_marked() -> None:
    params = combination_params("classification")
    ids = [p.id for p in params]
    assert len(ids) == len(set(ids)) == 3 * len(GRAPH_MODES) * len(PRECISIONS) * len(DEVICES)
    assert "resnet18-eager-fp32-cpu" in ids
    assert COMBINATION_ARGS.split(",") == ["workload", "graph_mode", "precision", "device"]
    for p in params:
        assert combination_id(*p.values) == p.id
        (mark,) = [m for m in p.marks if m.name == "workload"]
        assert mark.args == (p.values[0],)


def test_quick_keeps_eager_fp32_only() -> None:
    assert skip_reason("alexnet", "torchscript", "fp16", "cpu", quick=True) is not None
    reason = skip_reason("lstm_lm_train", "eager", "fp32", "cpu", quick=True)
    torch_missing = not combination_supported("lstm_lm_train", "eager", "fp32", "cpu")[0]
    assert (reason is None) != torch_missing


def test_compile_needs_a_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="needs torch")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    assert cxx_compiler() is None
    ok, reason = combination_supported("resnet18", "compile", "fp32", "cpu")
    assert not ok and "compiler" in reason


def test_cxx_env_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "my-cxx"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CXX", "my-cxx")
    assert cxx_compiler() == "my-cxx"


# ---- conversions (need torch) --------------------------------------------------------


def _tiny_mlp() -> object:
    torch = pytest.importorskip("torch", reason="needs torch")
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    ).eval()


def test_int8_quantises_linear_layers_and_stays_close() -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from pytest_edgeenergy.workloads.modes import apply_precision

    model = _tiny_mlp()
    x = torch.randn(8, 16)
    with torch.no_grad():
        ref = model(x)
    qmodel, facts = apply_precision(model, "int8")
    assert facts["quantized_modules"] == 2
    assert facts["quantized_param_fraction"] == 1.0
    with torch.no_grad():
        out = qmodel(x)
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, atol=0.05)
    assert not any(isinstance(m, torch.nn.Linear) and type(m) is torch.nn.Linear for m in qmodel)


def test_int8_without_linear_layers_is_unsupported() -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from pytest_edgeenergy.workloads.modes import apply_precision

    with pytest.raises(CombinationUnsupported, match="no Linear/LSTM"):
        apply_precision(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)), "int8")


def test_fp16_converts_weights() -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from pytest_edgeenergy.workloads.modes import apply_precision, float_dtype

    model, facts = apply_precision(_tiny_mlp(), "fp16")  # type: ignore[arg-type]
    assert facts == {}
    assert all(p.dtype == torch.float16 for p in model.parameters())
    assert float_dtype("fp16") == torch.float16 and float_dtype("int8") == torch.float32


def test_torchscript_trace_matches_eager() -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from pytest_edgeenergy.workloads.modes import to_graph_mode

    model = _tiny_mlp()
    x = torch.randn(3, 16)
    traced, facts = to_graph_mode(model, "torchscript", (x,))  # type: ignore[arg-type]
    assert facts == {"torchscript": "trace"}
    assert isinstance(traced, torch.jit.ScriptModule)
    with torch.no_grad():
        assert torch.equal(traced(x), model(x))


def test_torchscript_failure_is_a_skip_reason() -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from pytest_edgeenergy.workloads.modes import to_graph_mode

    class Unscriptable(torch.nn.Module):
        def forward(self, x: object) -> object:
            return {frozenset([1]): x}  # TorchScript has no frozenset

    with pytest.raises(CombinationUnsupported, match=r"torchscript \(script\) cannot convert"):
        to_graph_mode(Unscriptable(), "torchscript", (torch.ones(1),), script=True)


def test_eager_is_identity_and_compile_is_lazy() -> None:
    pytest.importorskip("torch", reason="needs torch")
    from pytest_edgeenergy.workloads.modes import to_graph_mode

    model = _tiny_mlp()
    same, facts = to_graph_mode(model, "eager", ())  # type: ignore[arg-type]
    assert same is model and facts == {}
    if cxx_compiler() is None:
        pytest.skip("no C++ compiler for torch.compile")
    compiled, facts = to_graph_mode(model, "compile", ())  # type: ignore[arg-type]
    assert callable(compiled) and compiled is not model and "compile" in facts


def test_importing_the_workload_modules_does_not_import_torch() -> None:
    import subprocess
    import sys

    modules = [
        "detection", "errors", "grid", "inference", "jpeg_cache", "local_files",
        "memory_estimate", "modes", "nlp", "registry", "training", "vision",
    ]  # fmt: skip
    code = (
        "import sys\n"
        + "".join(f"import pytest_edgeenergy.workloads.{m}\n" for m in modules)
        + "heavy = [m for m in ('torch', 'torchvision', 'transformers', 'numpy', 'PIL')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
