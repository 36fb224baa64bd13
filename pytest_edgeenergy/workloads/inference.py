"""An inference workload ready to measure: built, weights loaded, converted to its precision
and graph mode, on its device, with its inputs.

:func:`load_inference` is what a suite runs inside its ``load`` energy window: build (directly
on the device: unified memory would otherwise hold a CPU and a GPU copy), load local weights,
convert, and make ONE first call. That first call belongs to loading for every graph mode, so
modes compare fairly: torch.compile compiles there, TorchScript profiles there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CombinationUnsupported, WorkloadError
from .local_files import load_local_weights
from .modes import (
    apply_precision,
    compile_failure,
    first_line,
    float_dtype,
    quiet_torch_deprecations,
    require_supported,
    to_graph_mode,
)
from .registry import workload_spec

if TYPE_CHECKING:
    import torch

DETECTION_POSTPROCESS = (
    "inside the window: box decoding, score threshold, top-k and batched NMS (IoU 0.55)"
)


def build_model(workload: str) -> torch.nn.Module:
    """The bare model of an inference workload, random weights (as the weights file holds)."""
    spec = workload_spec(workload)
    if spec.kind == "classification":
        from .vision import build_classifier

        return build_classifier(workload)
    if spec.kind == "detection":
        from .detection import build_detector

        return build_detector(workload)
    if spec.kind == "nlp":
        from .nlp import build_encoder

        return build_encoder(workload)
    raise WorkloadError(f"{workload} is a {spec.kind} workload, not an inference one")


def make_inputs(
    workload: str, batch_size: int, *, device: str = "cpu", precision: str = "fp32", seed: int = 0
) -> tuple[Any, ...]:
    """The positional arguments of one call of ``workload`` at ``batch_size``."""
    spec = workload_spec(workload)
    if spec.kind == "classification":
        from .vision import make_images

        dtype = float_dtype(precision)
        return (make_images(batch_size, device=device, dtype=dtype, seed=seed),)
    if spec.kind == "detection":
        from .detection import make_detection_images

        dtype = float_dtype(precision)
        return (make_detection_images(batch_size, device=device, dtype=dtype, seed=seed),)
    if spec.kind == "nlp":
        from .nlp import make_tokens

        return make_tokens(batch_size, device=device, seed=seed)
    raise WorkloadError(f"{workload} is a {spec.kind} workload, not an inference one")


def describe_output(output: Any) -> dict[str, Any]:
    """Shapes of a call's result: ``{"shape": [...]}`` for a tensor; for detections
    ``{"images", "boxes_per_image", "keys"}``."""
    import torch

    if isinstance(output, torch.Tensor):
        return {"shape": list(output.shape)}
    from .detection import detections_of

    dets = detections_of(output)
    return {
        "images": len(dets),
        "boxes_per_image": [int(d["boxes"].shape[0]) for d in dets],
        "keys": sorted({k for d in dets for k in d}),
    }


@dataclass
class InferenceModel:
    """A converted model and its inputs; calling it runs one batch (no autograd)."""

    workload: str
    graph_mode: str
    precision: str
    device: str
    batch_size: int
    model: Callable[..., Any]
    inputs: tuple[Any, ...]
    facts: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] | None = None
    """What the first call returned (shapes, detections per image); None before it."""
    _no_grad: Callable[[], Any] = field(default=contextlib.nullcontext, repr=False)

    def __call__(self) -> Any:
        with self._no_grad():
            return self.model(*self.inputs)

    def params(self) -> dict[str, object]:
        """What the result's ``params`` should say about this workload."""
        return {
            "workload": self.workload,
            "batch_size": self.batch_size,
            "graph_mode": self.graph_mode,
            "precision": self.precision,
            "device": self.device,
            **self.facts,
        }


def load_inference(
    workload: str,
    *,
    graph_mode: str = "eager",
    precision: str = "fp32",
    device: str = "cpu",
    batch_size: int = 1,
    weights_dir: Path | None = None,
    inputs: tuple[Any, ...] | None = None,
    first_call: bool = True,
) -> InferenceModel:
    """Build ``workload`` ready to measure (see the module docstring).

    Raises :class:`~.errors.CombinationUnsupported` when the combination cannot run here,
    :class:`~.errors.LocalFileError` for a weights file that does not fit the model.
    """
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    require_supported(workload, graph_mode, precision, device)
    spec = workload_spec(workload)
    import torch

    with torch.device(device):
        model = build_model(workload)
    weights = load_local_weights(model, workload, weights_dir, device)
    facts: dict[str, Any] = {
        "input": spec.input_desc,
        "weights": weights,
        "model_params": sum(p.numel() for p in model.parameters()),
        "load_includes_first_call": first_call,
    }
    if spec.kind == "nlp":
        from .nlp import encoder_facts, wrap_encoder

        facts.update({k: v for k, v in encoder_facts(model).items() if v is not None})
        model = wrap_encoder(model)
    if spec.kind == "detection":
        facts["postprocess"] = DETECTION_POSTPROCESS
    model.eval()
    model.requires_grad_(False)
    model, precision_facts = apply_precision(model, precision)
    facts.update(precision_facts)
    if inputs is None:
        inputs = make_inputs(workload, batch_size, device=device, precision=precision)
    runnable, graph_facts = to_graph_mode(
        model, graph_mode, inputs, script=spec.kind == "detection"
    )
    facts.update(graph_facts)
    loaded = InferenceModel(
        workload,
        graph_mode,
        precision,
        device,
        batch_size,
        runnable,
        inputs,
        facts,
        _no_grad=torch.inference_mode,
    )
    if first_call:
        try:
            with quiet_torch_deprecations():
                loaded.output = describe_output(loaded())
        except Exception as e:
            if graph_mode == "compile":
                raise compile_failure(e) from e
            if graph_mode == "torchscript":
                raise CombinationUnsupported(
                    f"torchscript model of {workload} fails on its first call: "
                    f"{type(e).__name__}: {first_line(e)}"
                ) from e
            raise
    return loaded
