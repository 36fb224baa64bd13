"""How a workload runs: graph mode (eager, TorchScript, torch.compile), precision (fp32, fp16,
int8 dynamic quantisation) and device (cpu, cuda), and which combinations can run here.

:func:`combination_supported` answers before anything is built; conversions that fail at run
time (a model TorchScript cannot trace, a compiler error) raise
:class:`~.errors.CombinationUnsupported`. The suites skip both WITH the reason.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import CombinationUnsupported, WorkloadError
from .registry import WorkloadSpec, workload_spec

if TYPE_CHECKING:
    import torch

GRAPH_MODES = ("eager", "torchscript", "compile")
PRECISIONS = ("fp32", "fp16", "int8")
DEVICES = ("cpu", "cuda")
CXX_COMPILERS = ("g++", "c++", "clang++")
QUANT_ENGINES = ("x86", "fbgemm", "qnnpack", "onednn")
"""Quantised-kernel engines in order of preference (qnnpack is the one on ARM boards)."""


NO_CUDA_REASON = "cuda: torch.cuda.is_available() is False (CPU-only torch or no GPU)"
"""Why a cuda combination is skipped where torch sees no GPU (every suite says it alike)."""


def check_choice(what: str, value: str, allowed: Sequence[str]) -> None:
    """:class:`WorkloadError` naming ``what`` and the allowed values when ``value`` is not one."""
    if value not in allowed:
        raise WorkloadError(f"{what} {value!r} is not known; use one of {', '.join(allowed)}")


def importable(module: str) -> bool:
    """True when ``module`` can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA device."""
    if not importable("torch"):
        return False
    import torch

    return bool(torch.cuda.is_available())


def cxx_compiler() -> str | None:
    """The C++ compiler torch.compile's CPU backend would use (``$CXX`` first), or None."""
    env = os.environ.get("CXX")
    if env and shutil.which(env):
        return env
    for name in CXX_COMPILERS:
        if shutil.which(name):
            return name
    return None


def quant_engine() -> str | None:
    """A quantised-kernel engine this torch build has, or None."""
    import torch

    engines = set(torch.backends.quantized.supported_engines)
    return next((e for e in QUANT_ENGINES if e in engines), None)


def combination_supported(
    workload: str, graph_mode: str, precision: str, device: str
) -> tuple[bool, str]:
    """``(True, "")`` when the combination can run here, else ``(False, reason)``.

    Combinations that can run nowhere (fp16 on cpu, int8 on cuda, compiled training...)
    are named first, then what this machine lacks (torch, a GPU, a compiler). Unknown names
    raise :class:`~.errors.WorkloadError` (a typo is an error, not a skip).
    """
    spec = workload_spec(workload)
    check_choice("graph mode", graph_mode, GRAPH_MODES)
    check_choice("precision", precision, PRECISIONS)
    check_choice("device", device, DEVICES)
    reason = _never_runs(spec, graph_mode, precision, device) or _missing_here(
        spec, graph_mode, precision, device
    )
    return (reason is None), (reason or "")


def never_runs(workload: str, graph_mode: str, precision: str, device: str) -> str | None:
    """Why the combination runs nowhere (fp16 on cpu, int8 on cuda, compiled training...),
    whatever the interpreter; None when it can run somewhere. Unknown names raise
    :class:`~.errors.WorkloadError`."""
    spec = workload_spec(workload)
    check_choice("graph mode", graph_mode, GRAPH_MODES)
    check_choice("precision", precision, PRECISIONS)
    check_choice("device", device, DEVICES)
    return _never_runs(spec, graph_mode, precision, device)


def _never_runs(spec: WorkloadSpec, graph_mode: str, precision: str, device: str) -> str | None:
    if precision == "fp16" and device == "cpu":
        return (
            "fp16 runs on cuda only: CPU fp16 kernels are emulated or missing, so the "
            "figure would not be what a board deploys"
        )
    if precision == "int8" and device == "cuda":
        return (
            "int8 is dynamic quantisation (torch.ao quantize_dynamic), which has CPU kernels "
            "only; int8 on the GPU needs TensorRT"
        )
    if spec.kind == "training":
        if graph_mode != "eager":
            return f"{spec.name}: training steps run in eager mode only ({graph_mode} not offered)"
        if precision != "fp32":
            return f"{spec.name}: training runs in fp32 only ({precision} training not offered)"
    if precision == "int8" and not spec.quantizable:
        return (
            f"{spec.name}: int8 dynamic quantisation converts Linear/LSTM layers and "
            f"{spec.name} has none worth converting, so it would run the fp32 model"
        )
    return None


def _missing_here(spec: WorkloadSpec, graph_mode: str, precision: str, device: str) -> str | None:
    if not importable("torch"):
        return "torch is not installed (pip install torch torchvision)"
    for module in spec.needs:
        if not importable(module):
            return f"{spec.name} needs {module}, which is not installed"
    if device == "cuda" and not cuda_available():
        return NO_CUDA_REASON
    if precision == "int8" and quant_engine() is None:
        return "int8: this torch build has no quantised-kernel engine"
    if graph_mode == "compile":
        if device == "cpu" and cxx_compiler() is None:
            return (
                "torch.compile on cpu generates C++ and needs a compiler "
                f"({', '.join(CXX_COMPILERS)} or $CXX); none found"
            )
        if device == "cuda" and not importable("triton"):
            return "torch.compile on cuda needs triton, which is not installed"
    return None


def require_supported(workload: str, graph_mode: str, precision: str, device: str) -> None:
    """Raise :class:`~.errors.CombinationUnsupported` when the combination cannot run here."""
    ok, reason = combination_supported(workload, graph_mode, precision, device)
    if not ok:
        raise CombinationUnsupported(reason)


def float_dtype(precision: str) -> torch.dtype:
    """The dtype of float tensors (weights, images) at ``precision``: fp16 or fp32."""
    check_choice("precision", precision, PRECISIONS)
    import torch

    return torch.float16 if precision == "fp16" else torch.float32


@contextmanager
def quiet_torch_deprecations() -> Iterator[None]:
    """Hide torch's deprecation notices for torch.jit and torch.ao (still the APIs a JetPack
    torch offers) and tracer notices, so they do not drown the benchmark output."""
    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.")
        # tracing fixed-shape inputs makes shapes constants: exactly what a deployment traces
        tracer = getattr(torch.jit, "TracerWarning", None)
        if isinstance(tracer, type) and issubclass(tracer, Warning):
            warnings.filterwarnings("ignore", category=tracer)
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")
        warnings.filterwarnings("ignore", message=r".*torch\.(jit|ao)\b.*deprecated")
        warnings.filterwarnings("ignore", message=r".*quantize_per_tensor.*deprecated")
        warnings.filterwarnings("ignore", message=r".*always returns a \(Losses, Detections\)")
        yield


def apply_precision(
    model: torch.nn.Module, precision: str
) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Convert ``model`` to ``precision``; returns the model and facts for the result's params.

    int8 is dynamic quantisation of Linear and LSTM layers (weights int8, activations
    quantised on the fly); other layers stay fp32, and params say which fraction of the
    parameters was converted.
    """
    check_choice("precision", precision, PRECISIONS)
    if precision == "fp32":
        return model, {}
    if precision == "fp16":
        return model.half(), {}
    import torch

    engine = quant_engine()
    if engine is None:
        raise CombinationUnsupported("int8: this torch build has no quantised-kernel engine")
    if torch.backends.quantized.engine == "none":
        torch.backends.quantized.engine = engine
    targets = (torch.nn.Linear, torch.nn.LSTM)
    total = sum(p.numel() for p in model.parameters())
    converted = sum(
        p.numel() for m in model.modules() if isinstance(m, targets) for p in m.parameters()
    )
    n_modules = sum(1 for m in model.modules() if isinstance(m, targets))
    if n_modules == 0:
        raise CombinationUnsupported(
            f"int8: {type(model).__name__} has no Linear/LSTM layer for dynamic quantisation"
        )
    with quiet_torch_deprecations():
        from torch.ao.quantization import quantize_dynamic

        qmodel: torch.nn.Module = quantize_dynamic(  # type: ignore[no-untyped-call]
            model, set(targets), dtype=torch.qint8
        )
    return qmodel, {
        "quantization": "dynamic int8 (Linear, LSTM)",
        "quantized_modules": n_modules,
        "quantized_param_fraction": round(converted / total, 4) if total else 0.0,
        "quant_engine": str(torch.backends.quantized.engine),
    }


def to_graph_mode(
    model: torch.nn.Module,
    graph_mode: str,
    example_args: tuple[Any, ...],
    *,
    script: bool = False,
) -> tuple[Callable[..., Any], dict[str, Any]]:
    """``model`` in ``graph_mode``: eager as is, TorchScript by tracing with
    ``example_args`` (or scripting when ``script``: models with data-dependent control flow
    such as detection postprocess), or ``torch.compile``.

    torch.compile is lazy: it compiles on the first call, which the caller should make
    inside its load window. Failures raise :class:`~.errors.CombinationUnsupported`.
    """
    check_choice("graph mode", graph_mode, GRAPH_MODES)
    if graph_mode == "eager":
        return model, {}
    import torch

    if graph_mode == "torchscript":
        method = "script" if script else "trace"
        try:
            with quiet_torch_deprecations(), torch.no_grad():
                if script:
                    converted: Callable[..., Any] = torch.jit.script(model)
                else:
                    converted = torch.jit.trace(  # type: ignore[no-untyped-call]
                        model, example_args, check_trace=False, strict=False
                    )
        except Exception as e:  # TorchScript reports unsupported code with many types
            raise CombinationUnsupported(
                f"torchscript ({method}) cannot convert {type(model).__name__}: "
                f"{type(e).__name__}: {first_line(e)}"
            ) from e
        return converted, {"torchscript": method}
    try:
        compiled: Callable[..., Any] = torch.compile(model)
    except Exception as e:  # dynamo refuses some setups up front (Python version, platform)
        raise CombinationUnsupported(
            f"torch.compile is not available here: {type(e).__name__}: {first_line(e)}"
        ) from e
    return compiled, {"compile": "torch.compile(mode=default)"}


def compile_failure(e: BaseException) -> CombinationUnsupported:
    """The skip reason for a torch.compile error raised by the first (compiling) call."""
    return CombinationUnsupported(f"torch.compile failed here: {type(e).__name__}: {first_line(e)}")


def first_line(e: BaseException) -> str:
    """The first line of an error's message (for skip reasons), at most 300 characters."""
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
