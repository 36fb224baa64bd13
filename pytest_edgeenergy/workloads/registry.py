"""The workloads the suites know: name, kind, input and what they need to run.

Training workloads carry a ``_train`` suffix: training ResNet-18 is a different workload
from ResNet-18 inference (other params, other report keys); ``--workload 'resnet18*'``
selects both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import WorkloadError

Kind = Literal["classification", "detection", "nlp", "training", "llm"]


@dataclass(frozen=True)
class WorkloadSpec:
    """One workload: how it is called in ids/reports and what it needs."""

    name: str
    kind: Kind
    title: str
    input_desc: str
    needs: tuple[str, ...]
    """Python modules that must be importable (besides torch)."""
    quantizable: bool
    """Has Linear/LSTM layers that dynamic int8 quantisation converts."""


def _llm_specs() -> tuple[WorkloadSpec, ...]:
    """The causal language models of ``llm_shapes.json`` (one source of their names)."""
    from .llm_shapes import llm_shapes

    return tuple(
        WorkloadSpec(s.name, "llm", s.title, "prompt tokens (random ids)", ("transformers",), True)
        for s in llm_shapes().values()
    )


WORKLOADS: dict[str, WorkloadSpec] = {
    s.name: s
    for s in (
        WorkloadSpec(
            "alexnet", "classification", "AlexNet", "3x224x224 image", ("torchvision",), True
        ),
        WorkloadSpec(
            "resnet18", "classification", "ResNet-18", "3x224x224 image", ("torchvision",), True
        ),
        WorkloadSpec(
            "mobilenet_v2",
            "classification",
            "MobileNet-V2",
            "3x224x224 image",
            ("torchvision",),
            True,
        ),
        WorkloadSpec(
            "ssdlite320",
            "detection",
            "SSDLite320 MobileNet-V3-Large (postprocess + NMS inside forward)",
            "3x320x320 image",
            ("torchvision",),
            False,
        ),
        WorkloadSpec(
            "bert_tiny",
            "nlp",
            "BERT-Tiny (2 layers, 128 hidden)",
            "512 tokens",
            ("transformers",),
            True,
        ),
        WorkloadSpec(
            "distilbert",
            "nlp",
            "DistilBERT (6 layers, 768 hidden)",
            "512 tokens",
            ("transformers",),
            True,
        ),
        WorkloadSpec(
            "resnet18_train",
            "training",
            "ResNet-18 training step (JPEG decode + augmentation DataLoader)",
            "3x224x224 augmented JPEG crop",
            ("torchvision",),
            False,
        ),
        WorkloadSpec(
            "mobilenet_v3_small_train",
            "training",
            "MobileNet-V3-Small training step (JPEG decode + augmentation DataLoader)",
            "3x224x224 augmented JPEG crop",
            ("torchvision",),
            False,
        ),
        WorkloadSpec(
            "lstm_lm_train",
            "training",
            "2-layer LSTM language model training step (8.6 M params, random tokens)",
            "35 tokens",
            (),
            False,
        ),
        *_llm_specs(),
    )
}


def workload_spec(name: str) -> WorkloadSpec:
    """The spec of workload ``name``; :class:`WorkloadError` names the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise WorkloadError(
            f"workload {name!r} is not known; use one of {', '.join(WORKLOADS)}"
        ) from None


def workload_names(kind: Kind) -> tuple[str, ...]:
    """Names of the workloads of one kind, in table order."""
    return tuple(s.name for s in WORKLOADS.values() if s.kind == kind)
