"""The suites' workloads out of process: built in this test's workload worker
(``--edge-workload-python``, ``--edge-workload-prefix``; :mod:`..bench.worker`), from specs
made here of the same constants the in-process builders use.

What a worker runs: torch eager, fp32 on cpu or cuda, fp16 on cuda, int8 dynamic
quantisation on cpu, for the classification, detection, NLP and training workloads. Other
runtimes and graph modes are skipped with one line (they run in the harness's process), as
are the suites that run in process only (LLM, interleave). The skips that depend on the
worker's interpreter (torch, torchvision or transformers missing, no CUDA, no quantised
engine, an API its torchvision lacks) name that interpreter.

The memory pre-flight estimates from the architecture with torch: it runs where the
harness's own Python has torch and the workload's modules, and is left out where it has not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..bench.remote import RemoteWorkload
from .local_files import RANDOM_WEIGHTS, weights_file
from .modes import NO_CUDA_REASON, QUANT_ENGINES, importable, never_runs
from .registry import WorkloadSpec, workload_spec
from .runtimes import TORCH

__all__ = [
    "OUT_OF_PROCESS_OPTIONS",
    "RemoteTrainingStep",
    "check_in_worker",
    "in_process_only",
    "inference_spec",
    "load_inference_in_worker",
    "load_training_in_worker",
    "out_of_process",
    "remote_skip_reason",
    "training_spec",
]

OUT_OF_PROCESS_OPTIONS = "--edge-workload-python/--edge-workload-prefix"
WORKER_GRAPH_MODE = "eager"
SEED = 0


def out_of_process(edge_bench: object) -> bool:
    """True when the session runs the suites' workloads in a worker."""
    return bool(getattr(edge_bench, "out_of_process", False))


def in_process_only(edge_bench: object, what: str) -> None:
    """Skip a test that runs its workload in the harness's process only when the session
    asked for a worker."""
    if out_of_process(edge_bench):
        pytest.skip(
            f"{what} runs in the harness's process only, not in a workload worker; run it "
            f"without {OUT_OF_PROCESS_OPTIONS}"
        )


def remote_skip_reason(
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    *,
    runtime: str = TORCH,
    quick: bool = False,
) -> str | None:
    """Why this combination does not run in a worker, whatever its interpreter (None: it
    may; what the interpreter lacks is :func:`check_in_worker`'s)."""
    harness_only = runtime if runtime != TORCH else None
    if harness_only is None and graph_mode != WORKER_GRAPH_MODE:
        harness_only = graph_mode
    if harness_only is not None:
        return (
            f"{harness_only} runs in the harness's process only; in a workload worker "
            f"({OUT_OF_PROCESS_OPTIONS}) the suites run torch eager"
        )
    reason = never_runs(workload, graph_mode, precision, device)
    if reason is not None:
        return reason
    if quick and precision != "fp32":
        return (
            "--edge-quick runs torch eager fp32 only in a workload worker; run without it "
            f"for {precision}"
        )
    return None


def check_in_worker(
    edge_bench: Any,
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    batch_size: int,
    *,
    runtime: str = TORCH,
    quick: bool = False,
) -> None:
    """Skip a combination the worker cannot run (with the reason, naming its interpreter),
    starting the worker and importing torch and the workload's modules there (unmeasured);
    then the memory pre-flight where this Python can estimate it."""
    reason = remote_skip_reason(
        workload, graph_mode, precision, device, runtime=runtime, quick=quick
    )
    if reason is not None:
        pytest.skip(reason)
    spec = workload_spec(workload)
    worker = edge_bench.worker(list(spec.needs))
    info = worker.info or {}
    where = f"workload worker {worker.where}"
    for module in spec.needs:
        error = ((info.get("modules") or {}).get(module) or {}).get("error")
        if error:
            pytest.skip(
                f"{where}: {workload} needs {module}, which does not import there ({error})"
            )
    if device == "cuda" and not info.get("cuda_available"):
        pytest.skip(f"{where}: {NO_CUDA_REASON}")
    engines = set(info.get("quant_engines") or ())
    if precision == "int8" and not engines & set(QUANT_ENGINES):
        pytest.skip(f"{where}: int8: its torch build has no quantised-kernel engine")
    if importable("torch") and all(importable(m) for m in spec.needs):
        from .memory_estimate import estimate_workload_bytes

        edge_bench.preflight(
            estimate_bytes=estimate_workload_bytes(
                workload, batch_size, precision=precision, device=device
            ),
            what=f"{workload} bs{batch_size} {precision} eager on {device} (in a worker)",
        )


def _weights(weights_dir: Path | None, workload: str) -> str | None:
    """The weights file's path as the worker opens it (behind a prefix, the same path must
    exist there: mount the directory at the same place)."""
    path = weights_file(weights_dir, workload)
    return None if path is None else str(path)


def inference_spec(
    workload: str, precision: str, device: str, batch_size: int, weights: str | None
) -> dict[str, Any]:
    """The worker's spec of an inference workload: what :func:`.inference.load_inference`
    builds in process, with the same constants and seeds."""
    spec = workload_spec(workload)
    common: dict[str, Any] = {
        "workload": workload,
        "batch_size": batch_size,
        "device": device,
        "precision": precision,
        "seed": SEED,
        "weights": weights,
        "quant_engines": list(QUANT_ENGINES),
    }
    if spec.kind == "classification":
        from .vision import IMAGE_SIZE_PX, NUM_CLASSES

        return {
            **common,
            "kind": "classification",
            "arch": workload,
            "num_classes": NUM_CLASSES,
            "image_px": IMAGE_SIZE_PX,
        }
    if spec.kind == "detection":
        from .detection import DETECTION_SIZE_PX, DETECTOR_KWARGS, TORCHVISION_BUILDERS

        kwargs = dict(DETECTOR_KWARGS)
        return {
            **common,
            "kind": "detection",
            "arch": TORCHVISION_BUILDERS[workload],
            "num_classes": kwargs.pop("num_classes"),
            "model_kwargs": kwargs,
            "image_px": DETECTION_SIZE_PX,
        }
    if spec.kind == "nlp":
        from .nlp import ENCODER_CONFIGS, token_spec

        config_class, model_class, config = ENCODER_CONFIGS[workload]
        return {
            **common,
            "kind": "nlp",
            "config_class": config_class,
            "model_class": model_class,
            "config": dict(config),
            "tokens": token_spec(),
        }
    raise ValueError(f"{workload} is a {spec.kind} workload, not an inference one")


def _base_params(
    spec: WorkloadSpec, batch_size: int, precision: str, device: str
) -> dict[str, object]:
    return {
        "workload": spec.name,
        "batch_size": batch_size,
        "graph_mode": WORKER_GRAPH_MODE,
        "precision": precision,
        "device": device,
    }


def load_inference_in_worker(
    edge_bench: Any,
    workload: str,
    precision: str,
    device: str,
    batch_size: int,
    weights_dir: Path | None,
) -> RemoteWorkload:
    """Build an inference workload in the worker inside the measured ``load`` phase (build,
    local weights, precision, first call), as :func:`.inference.load_inference` does in
    process; its ``params()`` and ``output`` say what the in-process model's do."""
    from .inference import DETECTION_POSTPROCESS

    spec = workload_spec(workload)
    weights = _weights(weights_dir, workload)
    params = _base_params(spec, batch_size, precision, device)
    params.update(
        input=spec.input_desc,
        weights=weights or RANDOM_WEIGHTS,
        load_includes_first_call=True,
    )
    if spec.kind == "detection":
        params["postprocess"] = DETECTION_POSTPROCESS
    return edge_bench.load_in_worker(  # type: ignore[no-any-return]
        inference_spec(workload, precision, device, batch_size, weights),
        device=device,
        modules=list(spec.needs),
        params=params,
    )


class RemoteTrainingStep(RemoteWorkload):
    """A training step in a worker; :meth:`timing` is the in-process step's breakdown."""

    def timing(self) -> dict[str, Any]:
        """The per-minibatch breakdown (:func:`.training.summarize_timings`) of the
        worker's records, and the loss first and last."""
        from .training import MinibatchTiming, summarize_timings

        raw = super().timing() or {}
        records = [
            MinibatchTiming(int(e), int(i), float(f), float(c), float(t))
            for e, i, f, c, t in raw.get("records") or []
        ]
        out = summarize_timings(records)
        for key in ("minibatches_per_epoch", "loss_first", "loss_last"):
            out[key] = raw.get(key)
        return out


def training_spec(
    workload: str,
    batch_size: int,
    device: str,
    *,
    data_dir: Path | None,
    weights: str | None,
    loader_workers: int,
) -> dict[str, Any]:
    """The worker's spec of a training workload: what :func:`.training.build_trainer`
    builds in process (image workloads read ``data_dir`` there, else synthetic JPEGs the
    worker draws into a temporary directory of its own)."""
    from . import training as t
    from .jpeg_cache import JPEG_QUALITY, SYNTHETIC_CLASSES, SYNTHETIC_SIZE_PX

    common: dict[str, Any] = {
        "kind": "training",
        "workload": workload,
        "batch_size": batch_size,
        "device": device,
        "seed": SEED,
        "weights": weights,
    }
    if workload == "lstm_lm_train":
        return {
            **common,
            "model": "lstm_lm",
            "lstm": {
                "vocab": t.LSTM_VOCAB,
                "embed": t.LSTM_EMBED,
                "hidden": t.LSTM_HIDDEN,
                "layers": t.LSTM_LAYERS,
                "dropout": t.LSTM_DROPOUT,
                "seq_tokens": t.LSTM_SEQ_TOKENS,
                "minibatches": t.LSTM_MINIBATCHES_PER_EPOCH,
                "lr": t.LSTM_SGD["lr"],
                "clip": t.LSTM_CLIP_NORM,
            },
        }
    return {
        **common,
        "model": "image",
        "arch": "resnet18" if workload == "resnet18_train" else "mobilenet_v3_small",
        "data": None if data_dir is None else str(data_dir),
        "image": {
            "crop_px": t.CROP_PX,
            "mean": list(t.IMAGE_MEAN),
            "std": list(t.IMAGE_STD),
            "min_classes": t.VISION_CLASSES,
            "loader_workers": loader_workers,
            "sgd": dict(t.VISION_SGD),
            "synthetic": {
                "count": t.synthetic_jpeg_count(batch_size),
                "size_px": SYNTHETIC_SIZE_PX,
                "classes": SYNTHETIC_CLASSES,
                "quality": JPEG_QUALITY,
            },
        },
    }


def load_training_in_worker(
    edge_bench: Any,
    workload: str,
    batch_size: int,
    device: str,
    *,
    data_dir: Path | None,
    weights_dir: Path | None,
) -> RemoteTrainingStep:
    """Build a training step in the worker inside the measured ``load`` phase (its first
    minibatch included, as in process)."""
    from .training import (
        default_num_workers,
        synthetic_description,
        synthetic_jpeg_count,
        training_facts,
    )

    spec = workload_spec(workload)
    weights = _weights(weights_dir, workload)
    workers = default_num_workers()
    data = (
        f"local ImageFolder {data_dir}"
        if data_dir is not None
        else synthetic_description(synthetic_jpeg_count(batch_size))
    )
    params = _base_params(spec, batch_size, "fp32", device)
    params.update(training_facts(workload, data, workers))
    params.update(
        weights=weights or RANDOM_WEIGHTS,
        timing="per minibatch fetch/compute/e2e in params.training_timing",
    )
    return edge_bench.load_in_worker(  # type: ignore[no-any-return]
        training_spec(
            workload,
            batch_size,
            device,
            data_dir=data_dir,
            weights=weights,
            loader_workers=workers,
        ),
        device=device,
        modules=list(spec.needs),
        params=params,
        workload=RemoteTrainingStep,
    )
