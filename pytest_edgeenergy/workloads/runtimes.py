"""Runtimes besides torch: the inference workload exported to ONNX (``torch.onnx.export``,
the torch.export-based exporter) and run by ONNX Runtime, or by TensorRT through ONNX
Runtime's TensorRT execution provider (which builds a TensorRT engine from the ONNX graph).

* ``onnxruntime``: CPUExecutionProvider on cpu, CUDAExecutionProvider on cuda. fp32 as
  exported; int8 is ONNX Runtime's dynamic quantisation of the fp32 graph (weights int8,
  activations quantised on the fly; CPU kernels); fp16 is the half model exported on cuda.
* ``tensorrt``: cuda only; fp32, or fp16 by the provider's ``trt_fp16_enable``.

The exported file is cached (:func:`cached_onnx`): its key names the workload, batch size,
precision, device, weights file and the versions of everything that shapes the graph. A
model the exporter refuses is cached as refused too, with the exporter's reason, so the
next run skips it at once. Everything heavy (torch, onnx, onnxruntime) is imported inside
functions.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bench.settings import RUNTIMES
from .errors import CombinationUnsupported, WorkloadError
from .modes import (
    DEVICES,
    NO_CUDA_REASON,
    PRECISIONS,
    check_choice,
    cuda_available,
    first_line,
    importable,
)
from .registry import workload_spec

if TYPE_CHECKING:
    from .inference import InferenceModel

TORCH = "torch"
ONNXRUNTIME = "onnxruntime"
TENSORRT = "tensorrt"
EXPORTED_GRAPH = "onnx"
"""The ``graph_mode`` of a model run by another runtime: the exported ONNX graph."""
RUNTIME_PRECISIONS: dict[str, tuple[str, ...]] = {
    ONNXRUNTIME: ("fp32", "fp16", "int8"),
    TENSORRT: ("fp32", "fp16"),
}
RUNTIME_DEVICES: dict[str, tuple[str, ...]] = {ONNXRUNTIME: DEVICES, TENSORRT: ("cuda",)}
PROVIDERS: dict[tuple[str, str], str] = {
    (ONNXRUNTIME, "cpu"): "CPUExecutionProvider",
    (ONNXRUNTIME, "cuda"): "CUDAExecutionProvider",
    (TENSORRT, "cuda"): "TensorrtExecutionProvider",
}
"""The execution provider each runtime uses on each device."""
EXPORTER = "torch.onnx.export(dynamo=True)"
ORT_INT8 = "onnxruntime quantize_dynamic: int8 weights (QInt8), activations quantised on the fly"
ONNX_NEEDS = ("onnxruntime", "onnx", "onnxscript")
"""Modules export + run need; the ``[onnx]`` extra installs them."""
CACHE_FORMAT = 1
"""Bumped when what a cache entry holds changes."""
MODEL_FILE = "model.onnx"
FACTS_FILE = "facts.json"
REFUSED_FILE = "refused.txt"


def provider_for(runtime: str, device: str) -> str:
    """The execution provider ``runtime`` uses on ``device`` (e.g. ``CPUExecutionProvider``)."""
    check_choice("runtime", runtime, RUNTIMES[1:])
    check_choice("device", device, DEVICES)
    provider = PROVIDERS.get((runtime, device))
    if provider is None:
        raise CombinationUnsupported(
            f"{runtime} runs on {', '.join(RUNTIME_DEVICES[runtime])} only"
        )
    return provider


def available_providers() -> list[str]:
    """ONNX Runtime's execution providers in this installation."""
    import onnxruntime  # type: ignore[import-untyped, import-not-found, unused-ignore]

    return list(onnxruntime.get_available_providers())


def runtime_supported(workload: str, runtime: str, precision: str, device: str) -> tuple[bool, str]:
    """``(True, "")`` when ``workload`` can run on ``runtime`` at ``precision`` on ``device``
    here, else ``(False, reason)``: first what can run nowhere, then what this machine lacks
    (a package, a GPU, an execution provider). Unknown names raise :class:`WorkloadError`."""
    spec = workload_spec(workload)
    check_choice("runtime", runtime, RUNTIMES[1:])
    check_choice("precision", precision, PRECISIONS)
    check_choice("device", device, DEVICES)
    reason = _never_runs(spec.kind, runtime, precision, device) or _missing_here(
        spec.needs, runtime, device
    )
    return (reason is None), (reason or "")


def _never_runs(kind: str, runtime: str, precision: str, device: str) -> str | None:
    if kind == "training":
        return f"{runtime} runs inference only (training steps run in torch)"
    if device not in RUNTIME_DEVICES[runtime]:
        return f"{runtime} runs on {', '.join(RUNTIME_DEVICES[runtime])} only"
    if precision not in RUNTIME_PRECISIONS[runtime]:
        return f"{runtime} offers {', '.join(RUNTIME_PRECISIONS[runtime])} here, not {precision}"
    if precision == "fp16" and device == "cpu":
        return (
            "fp16 runs on cuda only: CPU fp16 kernels are emulated or missing, so the "
            "figure would not be what a board deploys"
        )
    if precision == "int8" and device == "cuda":
        return (
            "int8 with onnxruntime is dynamic quantisation, whose integer kernels run on the "
            "CPU; int8 on the GPU needs TensorRT with a calibration set (not offered)"
        )
    return None


def _missing_here(needs: Sequence[str], runtime: str, device: str) -> str | None:
    if not importable("torch"):
        return "torch is not installed (pip install torch torchvision)"
    for module in needs:
        if not importable(module):
            return f"needs {module}, which is not installed"
    for module in ONNX_NEEDS:
        if not importable(module):
            return f"{runtime} needs {module}: pip install 'pytest-edgeenergy[onnx]'"
    if device == "cuda" and not cuda_available():
        return NO_CUDA_REASON
    provider = PROVIDERS[(runtime, device)]
    have = available_providers()
    if provider not in have:
        package = (
            "onnxruntime-gpu built with TensorRT" if runtime == TENSORRT else "onnxruntime-gpu"
        )
        return (
            f"{runtime} on {device} needs ONNX Runtime's {provider}; this onnxruntime has "
            f"{', '.join(have)} ({package} provides it)"
        )
    return None


def require_runtime(workload: str, runtime: str, precision: str, device: str) -> None:
    """Raise :class:`CombinationUnsupported` when the combination cannot run here."""
    ok, reason = runtime_supported(workload, runtime, precision, device)
    if not ok:
        raise CombinationUnsupported(reason)


def export_precision(runtime: str, precision: str) -> str:
    """The precision of the torch model that is exported: fp16 for onnxruntime fp16 (the
    half model), else fp32 (int8 quantises the fp32 graph; TensorRT builds fp16 itself)."""
    return "fp16" if (runtime, precision) == (ONNXRUNTIME, "fp16") else "fp32"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def weights_identity(weights_dir: Path | None, workload: str) -> str:
    """What the cache key says about the weights: ``random``, or the local file with its
    size and modification time (a new file is a new export)."""
    if weights_dir is None:
        return "random"
    path = Path(weights_dir) / f"{workload}.pt"
    if not path.is_file():
        return "random"
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def cache_key(
    workload: str,
    precision: str,
    device: str,
    batch_size: int,
    weights: str,
) -> str:
    """A cache entry's name: the workload and a digest of everything that shapes its graph."""
    shape = {
        "format": CACHE_FORMAT,
        "workload": workload,
        "precision": precision,
        "device": device,
        "batch_size": batch_size,
        "weights": weights,
        "versions": {
            d: _version(d) for d in ("torch", "torchvision", "transformers", "onnx", "onnxscript")
        },
    }
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]
    return f"{workload}-{precision}-{device}-bs{batch_size}-{digest}"


@contextlib.contextmanager
def _quiet_export() -> Iterator[None]:
    """The exporter and the quantiser log progress and advice at INFO/WARNING; a benchmark
    run shows their errors only."""
    import warnings

    from .modes import quiet_torch_deprecations

    loggers = [logging.getLogger(n) for n in ("", "torch.onnx", "onnxscript", "onnx_ir")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        with quiet_torch_deprecations(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def exporter_reason(e: BaseException) -> str:
    """One line from an exporter error: its first line without terminal colours or the
    exporter's "Next steps:" advice, then the innermost cause (what actually failed)."""
    text = _ANSI.sub("", first_line(e)).removesuffix("Next steps:").strip()
    root = e
    for _ in range(8):
        if root.__cause__ is None:
            break
        root = root.__cause__
    reason = f"{type(e).__name__}: {text}"
    if root is not e:
        reason += f" ({type(root).__name__}: {_ANSI.sub('', first_line(root)).strip()})"
    return reason


def export_onnx(model: Any, inputs: tuple[Any, ...], path: Path) -> dict[str, Any]:
    """Export ``model`` called on ``inputs`` to ``path`` (static shapes, weights in
    ``path``'s external-data file beside it); returns facts for the result's params.
    The exporter's refusal raises :class:`CombinationUnsupported` with its first line."""
    import torch

    try:
        with _quiet_export(), torch.inference_mode():
            program = torch.onnx.export(model, inputs, str(path), dynamo=True)
    except Exception as e:  # the exporter reports unsupported code with many types
        raise CombinationUnsupported(
            f"{EXPORTER} cannot export {type(model).__name__}: {exporter_reason(e)}"
        ) from e
    opset = None
    if program is not None:
        opset = program.model.opset_imports.get("")
    return {"onnx_exporter": EXPORTER, "onnx_opset": opset}


def quantize_int8(source: Path, target: Path) -> dict[str, Any]:
    """ONNX Runtime's dynamic int8 quantisation of ``source`` into ``target``."""
    from onnxruntime.quantization import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
        QuantType,
        quantize_dynamic,
    )

    with _quiet_export():
        quantize_dynamic(source, target, weight_type=QuantType.QInt8)
    return {"quantization": ORT_INT8}


def cached_onnx(
    cache_dir: Path,
    key: str,
    make: Callable[[Path], dict[str, Any]],
) -> tuple[Path, dict[str, Any], bool]:
    """``(model path, facts, hit)`` of cache entry ``key``: made by ``make(path)`` (which
    writes the ONNX file and returns its facts) when absent. A refusal
    (:class:`CombinationUnsupported`) is cached and raised again on later calls."""
    entry = cache_dir / key
    refused = cache_dir / f"{key}.{REFUSED_FILE}"
    if refused.is_file():
        raise CombinationUnsupported(refused.read_text().strip())
    if (entry / MODEL_FILE).is_file() and (entry / FACTS_FILE).is_file():
        return entry / MODEL_FILE, json.loads((entry / FACTS_FILE).read_text()), True
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache_dir))
    try:
        try:
            facts = make(work / MODEL_FILE)
        except CombinationUnsupported as e:
            refused.write_text(e.reason + "\n")
            raise
        (work / FACTS_FILE).write_text(json.dumps(facts, sort_keys=True))
        try:
            os.replace(work, entry)  # atomic; another process may have made it meanwhile
        except OSError:
            if not (entry / MODEL_FILE).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return entry / MODEL_FILE, facts, False


def ort_session(path: Path, provider: str, precision: str, cache_dir: Path | None = None) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``path`` on ``provider`` (CPU fallback for
    nodes a GPU provider lacks); TensorRT builds fp16 when asked and caches its engines."""
    import onnxruntime  # type: ignore[import-untyped, import-not-found, unused-ignore]

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: node placement notices flood the output
    providers: list[Any]
    if provider == "TensorrtExecutionProvider":
        trt: dict[str, Any] = {"trt_fp16_enable": precision == "fp16"}
        if cache_dir is not None:
            trt.update(trt_engine_cache_enable=True, trt_engine_cache_path=str(cache_dir))
        providers = [(provider, trt), "CUDAExecutionProvider", "CPUExecutionProvider"]
    elif provider == "CPUExecutionProvider":
        providers = [provider]
    else:
        providers = [provider, "CPUExecutionProvider"]
    try:
        session = onnxruntime.InferenceSession(str(path), options, providers=providers)
    except Exception as e:  # ONNX Runtime raises its own exception types per failure
        raise CombinationUnsupported(
            f"onnxruntime cannot load the exported model on {provider}: "
            f"{type(e).__name__}: {first_line(e)}"
        ) from e
    used = session.get_providers()
    if not used or used[0] != provider:
        raise CombinationUnsupported(
            f"onnxruntime did not start {provider} (session providers: {', '.join(used)})"
        )
    return session


def session_runner(session: Any, inputs: tuple[Any, ...], device: str) -> Callable[[], Any]:
    """A call running ``session`` once on ``inputs`` (torch tensors): numpy feeds on cpu
    (converted once, here), CUDA buffers bound in place on cuda (no host copies)."""
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise WorkloadError(f"the exported model takes {len(names)} inputs, given {len(inputs)}")
    if device == "cpu":
        feeds = {n: t.detach().cpu().numpy() for n, t in zip(names, inputs, strict=True)}
        return lambda: session.run(None, feeds)
    import numpy as np

    binding = session.io_binding()
    for name, t in zip(names, inputs, strict=True):
        t = t.contiguous()
        dtype = np.dtype(str(t.dtype).removeprefix("torch."))
        binding.bind_input(name, "cuda", t.device.index or 0, dtype, list(t.shape), t.data_ptr())
    for out in session.get_outputs():
        binding.bind_output(out.name, "cuda")

    def run() -> Any:
        session.run_with_iobinding(binding)
        return binding.get_outputs()

    run.keep_alive = inputs  # type: ignore[attr-defined]  # bound buffers must outlive the run
    return run


def output_shapes(outputs: Sequence[Any]) -> dict[str, Any]:
    """``{"shape": [...]}`` of a one-output call (as torch's :func:`~.inference.describe_output`),
    else ``{"shapes": [[...], ...]}``."""
    shapes = [list(o.shape() if callable(o.shape) else o.shape) for o in outputs]
    return {"shape": shapes[0]} if len(shapes) == 1 else {"shapes": shapes}


def runtime_overhead_bytes(workload: str, runtime: str, precision: str) -> int:
    """Memory a runtime adds to the torch estimate: its own copy of the weights (fp32; int8
    keeps the fp32 graph while quantising)."""
    from .memory_estimate import FP32_BYTES, workload_footprint

    if runtime == TORCH:
        return 0
    params = workload_footprint(workload).params
    return params * FP32_BYTES + (params if precision == "int8" else 0)


def load_runtime(
    workload: str,
    *,
    runtime: str,
    precision: str = "fp32",
    device: str = "cpu",
    batch_size: int = 1,
    weights_dir: Path | None = None,
    cache_dir: Path | None = None,
    first_call: bool = True,
) -> InferenceModel:
    """``workload`` exported to ONNX and loaded by ``runtime``, ready to measure: what a
    suite runs inside its ``load`` window (export unless cached, session creation and the
    first call). Without ``cache_dir`` the export goes to a temporary directory.

    Raises :class:`CombinationUnsupported` when the combination cannot run here or the
    exporter refuses the model.
    """
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    require_runtime(workload, runtime, precision, device)
    provider = provider_for(runtime, device)
    from .inference import InferenceModel, load_inference, make_inputs

    exported = export_precision(runtime, precision)

    def export(path: Path) -> dict[str, Any]:
        loaded = load_inference(
            workload,
            precision=exported,
            device=device,
            batch_size=batch_size,
            weights_dir=weights_dir,
            first_call=False,
        )
        facts = {k: v for k, v in loaded.facts.items() if k != "load_includes_first_call"}
        return {**facts, **export_onnx(loaded.model, loaded.inputs, path)}

    with contextlib.ExitStack() as stack:
        root = cache_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        weights = weights_identity(weights_dir, workload)
        fp_key = cache_key(workload, exported, device, batch_size, weights)
        path, facts, hit = cached_onnx(root, fp_key, export)
        if precision == "int8":

            def quantize(target: Path) -> dict[str, Any]:
                return {**facts, **quantize_int8(path, target)}

            int8_key = cache_key(workload, "int8", device, batch_size, weights)
            path, facts, hit_int8 = cached_onnx(root, int8_key, quantize)
            hit = hit and hit_int8
        session = ort_session(path, provider, precision, cache_dir)
    inputs = make_inputs(workload, batch_size, device=device, precision=exported)
    run = session_runner(session, inputs, device)
    loaded_model = InferenceModel(
        workload,
        EXPORTED_GRAPH,
        precision,
        device,
        batch_size,
        lambda: run(),
        (),
        {
            **facts,
            "runtime": runtime,
            "provider": provider,
            "export_cache": "hit" if hit else "miss",
            "load_includes_first_call": first_call,
        },
    )
    if first_call:
        try:
            loaded_model.output = output_shapes(loaded_model())
        except Exception as e:  # ONNX Runtime raises its own exception types per failure
            raise CombinationUnsupported(
                f"{runtime} fails on the first call of {workload}: "
                f"{type(e).__name__}: {first_line(e)}"
            ) from e
    return loaded_model
