"""Workload-specific numbers for the memory pre-flight: parameter count and activation bytes
per item, fed to :func:`pytest_edgeenergy.bench.memory.estimate_peak_bytes` (which adds the
weights at the precision, training state, the CUDA context and the margin check).

Activations come from a probe on PyTorch's ``meta`` device: the model is built and run
without allocating or computing anything, and forward hooks record every layer's output
size. Transformers and the LSTM use closed forms of their shapes instead (their attention
and gate tensors never appear as layer outputs).

Rules (fp32 bytes per item; fp16 halves activations):

* inference: 3 x the largest layer output (input, output and a residual live together)
  + the input; detection adds its postprocess buffers (anchors x classes);
* training: 2 x the sum of all layer outputs (autograd keeps them, and the backward pass
  makes gradients of the same size) + the input; image loaders add their prefetched batches
  and worker processes.

Weights are counted at fp32 for every precision: the builders make fp32 weights first, then
``half()`` or quantise, so the fp32 copy is the peak; int8 adds its int8 copy on top.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import WorkloadError
from .registry import workload_spec

if TYPE_CHECKING:
    import torch

FP32_BYTES = 4
MIB = 1024 * 1024
LOADER_WORKER_BYTES = 150 * MIB
"""A DataLoader worker process's own memory (forked interpreter touching its pages)."""
LOADER_PREFETCH_BATCHES = 2
"""torch's default ``prefetch_factor``: batches in flight per worker."""
SSDLITE_ANCHORS = 3234
"""Default boxes of SSDLite320: 6 per cell of its 20, 10, 5, 3, 2, 1 feature maps."""


@dataclass(frozen=True)
class Footprint:
    """What one workload needs besides the runtime: parameters and per-item activations."""

    workload: str
    params: int
    activation_bytes_per_item: int
    """fp32 bytes per item (image, sequence) at the workload's own rule (see module doc)."""
    training: bool
    method: str
    """``meta-probe`` or ``analytic``."""


def tensor_bytes(obj: Any) -> int:
    """Bytes of every tensor in ``obj`` (a tensor, or nested tuples/lists/dicts of them)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (tuple, list)):
        return sum(tensor_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(tensor_bytes(o) for o in obj.values())
    return 0


def leaf_output_bytes(model: torch.nn.Module, *inputs: Any) -> list[int]:
    """Output bytes of every leaf layer in one forward pass of ``model`` on ``inputs``."""
    import torch

    sizes: list[int] = []

    def record(_m: torch.nn.Module, _i: Any, out: Any) -> None:
        sizes.append(tensor_bytes(out))

    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    hooks = [m.register_forward_hook(record) for m in leaves]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    return sizes


def _param_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _vision_probe(workload: str, model: torch.nn.Module, size_px: int) -> Footprint:
    import torch

    model.eval()  # batch-norm refuses a batch of 1 in training mode; shapes are the same
    x = torch.empty(1, 3, size_px, size_px, device="meta")
    input_bytes = 3 * size_px * size_px * FP32_BYTES
    training = workload.endswith("_train")
    if workload == "ssdlite320":
        features = list(model.backbone(x).values())  # type: ignore[operator]
        sizes = leaf_output_bytes(model.backbone, x) + leaf_output_bytes(model.head, features)  # type: ignore[arg-type]
        from .detection import NUM_CLASSES

        postprocess = SSDLITE_ANCHORS * (NUM_CLASSES * 3 + 8) * FP32_BYTES
        per_item = 3 * max(sizes) + input_bytes + postprocess
    else:
        sizes = leaf_output_bytes(model, x)
        if training:
            # images prefetched by each loader worker, per item of the batch
            from .training import default_num_workers

            prefetch = LOADER_PREFETCH_BATCHES * default_num_workers() * input_bytes
            per_item = 2 * sum(sizes) + input_bytes + prefetch
        else:
            per_item = 3 * max(sizes) + input_bytes
    return Footprint(workload, _param_count(model), per_item, training, "meta-probe")


def _encoder_footprint(workload: str, model: torch.nn.Module) -> Footprint:
    from .nlp import SEQ_LEN_TOKENS, encoder_facts

    facts = encoder_facts(model)
    hidden = int(facts["hidden_size"])  # type: ignore[call-overload]
    heads = int(facts["heads"])  # type: ignore[call-overload]
    config = getattr(model, "config", None)
    inner = int(
        getattr(config, "intermediate_size", None) or getattr(config, "hidden_dim", 4 * hidden)
    )
    n = SEQ_LEN_TOKENS
    # one layer's live tensors: residual, q/k/v, context, scores + probabilities, FFN in/out
    per_item = FP32_BYTES * (5 * n * hidden + 2 * n * inner + 2 * heads * n * n)
    per_item += 2 * n * 8  # int64 ids and mask
    return Footprint(workload, _param_count(model), per_item, False, "analytic")


def _lstm_footprint(model: torch.nn.Module) -> Footprint:
    from .training import LSTM_EMBED, LSTM_HIDDEN, LSTM_LAYERS, LSTM_SEQ_TOKENS, LSTM_VOCAB

    t = LSTM_SEQ_TOKENS
    # embedding, per layer 4 gates + cell + hidden saved per step, logits + log-softmax + grad
    per_item = FP32_BYTES * t * (2 * LSTM_EMBED + LSTM_LAYERS * 6 * LSTM_HIDDEN + 3 * LSTM_VOCAB)
    return Footprint("lstm_lm_train", _param_count(model), 2 * per_item, True, "analytic")


@functools.cache
def workload_footprint(workload: str) -> Footprint:
    """Parameters and activation bytes per item of ``workload`` (cached per process)."""
    spec = workload_spec(workload)
    import torch

    with torch.device("meta"):
        if spec.kind == "classification":
            from .vision import build_classifier

            return _vision_probe(workload, build_classifier(workload), 224)
        if spec.kind == "detection":
            from .detection import DETECTION_SIZE_PX, build_detector

            return _vision_probe(workload, build_detector(workload), DETECTION_SIZE_PX)
        if spec.kind == "nlp":
            from .nlp import build_encoder

            return _encoder_footprint(workload, build_encoder(workload))
        if workload == "lstm_lm_train":
            from .training import build_lstm_lm

            return _lstm_footprint(build_lstm_lm())
        from .vision import build_classifier, build_mobilenet_v3_small

        model = (
            build_classifier("resnet18")
            if workload == "resnet18_train"
            else build_mobilenet_v3_small()
        )
        return _vision_probe(workload, model, 224)


def estimate_workload_bytes(
    workload: str, batch_size: int, *, precision: str = "fp32", device: str = "cpu"
) -> int:
    """Peak bytes ``workload`` will add at ``batch_size``, for ``edge_bench.preflight``.

    Includes the CUDA context on cuda (the bench's :data:`CUDA_CONTEXT_BYTES`) and, for
    image training, the DataLoader worker processes.
    """
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    from ..bench.memory import estimate_peak_bytes

    fp = workload_footprint(workload)
    activations = (
        fp.activation_bytes_per_item // 2 if precision == "fp16" else fp.activation_bytes_per_item
    )
    overhead = 0
    if precision == "int8":
        overhead += fp.params  # the int8 copy made while the fp32 weights still exist
    if fp.training and workload != "lstm_lm_train":
        from .training import default_num_workers

        overhead += default_num_workers() * LOADER_WORKER_BYTES
    return estimate_peak_bytes(
        params=fp.params,
        precision="fp32",
        batch_size=batch_size,
        activation_bytes_per_item=activations,
        training=fp.training,
        cuda=device.startswith("cuda"),
        host_copy=False,
        overhead_bytes=overhead,
    )
