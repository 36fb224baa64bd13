"""The suites' grid: every workload of a kind x graph mode x precision x device, as pytest
parameters with readable ids (``resnet18-eager-fp32-cpu``) and a ``workload`` marker, and
the one place that decides whether a combination runs here or is skipped with its reason.

The inference suites add a runtime dimension (:data:`INFERENCE_ARGS`): torch in its graph
modes (ids unchanged: ``resnet18-eager-fp32-cpu``), and the runtimes of :mod:`.runtimes`
running the exported ONNX graph (``resnet18-onnxruntime-fp32-cpu``, graph mode ``onnx``).

With ``--edge-workload-python``/``--edge-workload-prefix`` the set-up helpers build the
workload in the test's workload worker instead (:mod:`.remote`); ids and params are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from .errors import CombinationUnsupported
from .modes import DEVICES, GRAPH_MODES, PRECISIONS, combination_supported
from .registry import Kind, workload_names
from .runtimes import (
    EXPORTED_GRAPH,
    ONNXRUNTIME,
    RUNTIME_DEVICES,
    RUNTIME_PRECISIONS,
    TORCH,
    runtime_supported,
)

COMBINATION_ARGS = "workload,graph_mode,precision,device"
INFERENCE_ARGS = "workload,runtime,graph_mode,precision,device"
QUICK_GRAPH_MODE = "eager"
QUICK_PRECISION = "fp32"
QUICK_RUNS = ((TORCH, QUICK_GRAPH_MODE, QUICK_PRECISION), (ONNXRUNTIME, EXPORTED_GRAPH, "fp32"))
"""What ``--edge-quick`` keeps of the grid: torch eager fp32 and onnxruntime fp32."""

T = TypeVar("T")


def combination_id(workload: str, graph_mode: str, precision: str, device: str) -> str:
    """``resnet18-eager-fp32-cpu``."""
    return f"{workload}-{graph_mode}-{precision}-{device}"


def combination_params(kind: Kind) -> list[Any]:
    """``pytest.param`` for every combination of the workloads of ``kind``, each marked
    ``@pytest.mark.workload(name)`` (what ``--workload`` filters on)."""
    return [
        pytest.param(
            w,
            g,
            p,
            d,
            id=combination_id(w, g, p, d),
            marks=pytest.mark.workload(w),
        )
        for w in workload_names(kind)
        for g in GRAPH_MODES
        for p in PRECISIONS
        for d in DEVICES
    ]


def inference_id(workload: str, runtime: str, graph_mode: str, precision: str, device: str) -> str:
    """``resnet18-eager-fp32-cpu`` for torch (as before the runtime dimension, so old
    baselines still match), ``resnet18-onnxruntime-fp32-cpu`` for another runtime."""
    if runtime == TORCH:
        return combination_id(workload, graph_mode, precision, device)
    return f"{workload}-{runtime}-{precision}-{device}"


def inference_params(kind: Kind) -> list[Any]:
    """``pytest.param`` for :data:`INFERENCE_ARGS`: every torch combination of the workloads
    of ``kind`` (graph mode x precision x device), then every runtime's precisions x devices
    (graph mode ``onnx``); each marked ``@pytest.mark.workload(name)``."""
    combos = [(TORCH, g, p, d) for g in GRAPH_MODES for p in PRECISIONS for d in DEVICES]
    combos += [
        (r, EXPORTED_GRAPH, p, d)
        for r in RUNTIME_PRECISIONS
        for p in RUNTIME_PRECISIONS[r]
        for d in RUNTIME_DEVICES[r]
    ]
    return [
        pytest.param(w, r, g, p, d, id=inference_id(w, r, g, p, d), marks=pytest.mark.workload(w))
        for w in workload_names(kind)
        for r, g, p, d in combos
    ]


def skip_reason(
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    *,
    quick: bool = False,
    runtime: str = TORCH,
) -> str | None:
    """Why this combination does not run here (None: it runs).

    ``quick`` (``--edge-quick``, a smoke run) keeps torch eager fp32 and onnxruntime fp32
    only: TorchScript tracing and above all torch.compile (about a minute per model on a
    small CPU) would dominate it.
    """
    if runtime == TORCH:
        ok, reason = combination_supported(workload, graph_mode, precision, device)
    else:
        ok, reason = runtime_supported(workload, runtime, precision, device)
    if not ok:
        return reason
    if quick and (runtime, graph_mode, precision) not in QUICK_RUNS:
        what = f"{graph_mode} {precision}" if runtime == TORCH else f"{runtime} {precision}"
        return (
            f"--edge-quick runs torch {QUICK_GRAPH_MODE} {QUICK_PRECISION} and "
            f"{ONNXRUNTIME} fp32 only; run without it for {what}"
        )
    return None


def is_quick(edge_bench: object) -> bool:
    """True when the session is a ``--edge-quick`` smoke run (from ``edge_bench.settings``)."""
    return bool(getattr(getattr(edge_bench, "settings", None), "quick", False))


def phase_or_skip(edge_bench: Any, label: str, fn: Callable[[], T], device: str) -> T:
    """``edge_bench.phase(label, fn)``'s value; a :class:`~.errors.CombinationUnsupported`
    raised while building (TorchScript cannot convert, torch.compile fails) skips the test
    with its reason instead of failing it."""
    try:
        value, _ = edge_bench.phase(label, fn, device=device)
    except CombinationUnsupported as e:
        pytest.skip(e.reason)
    return value  # type: ignore[no-any-return]


def check_and_preflight(
    edge_bench: Any,
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    batch_size: int,
    *,
    runtime: str = TORCH,
) -> None:
    """Skip a combination this machine cannot run (with the reason), then skip one whose
    estimated peak memory will not fit the board (with the estimate and the limit). Out of
    process, the worker's interpreter is what must run it (:func:`.remote.check_in_worker`)."""
    from .remote import check_in_worker, out_of_process

    if out_of_process(edge_bench):
        check_in_worker(
            edge_bench,
            workload,
            graph_mode,
            precision,
            device,
            batch_size,
            runtime=runtime,
            quick=is_quick(edge_bench),
        )
        return
    from .memory_estimate import estimate_workload_bytes
    from .runtimes import runtime_overhead_bytes

    reason = skip_reason(
        workload, graph_mode, precision, device, quick=is_quick(edge_bench), runtime=runtime
    )
    if reason is not None:
        pytest.skip(reason)
    how = graph_mode if runtime == TORCH else runtime
    edge_bench.preflight(
        estimate_bytes=estimate_workload_bytes(
            workload, batch_size, precision=precision, device=device
        )
        + runtime_overhead_bytes(workload, runtime, precision),
        what=f"{workload} bs{batch_size} {precision} {how} on {device}",
    )


def prepare_inference(
    edge_bench: Any,
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    batch_size: int,
    weights_dir: Any,
    *,
    runtime: str = TORCH,
    cache_dir: Any = None,
) -> Any:
    """An inference suite's set-up: :func:`check_and_preflight`, then build, load local
    weights, convert and make the first call inside the measured ``load`` phase; for
    another runtime, export to ONNX (unless cached under ``cache_dir``), create its session
    and make the first call there.

    Returns the :class:`~.inference.InferenceModel`; the suite checks its output, then
    measures ``edge_bench.run(model, items_per_call=batch_size, params=model.params())``.
    """
    from .inference import load_inference
    from .remote import load_inference_in_worker, out_of_process
    from .runtimes import load_runtime

    check_and_preflight(
        edge_bench, workload, graph_mode, precision, device, batch_size, runtime=runtime
    )
    if out_of_process(edge_bench):
        return load_inference_in_worker(
            edge_bench, workload, precision, device, batch_size, weights_dir
        )
    if runtime != TORCH:
        return phase_or_skip(
            edge_bench,
            "load",
            lambda: load_runtime(
                workload,
                runtime=runtime,
                precision=precision,
                device=device,
                batch_size=batch_size,
                weights_dir=weights_dir,
                cache_dir=None if cache_dir is None else Path(cache_dir) / "onnx",
            ),
            device,
        )
    return phase_or_skip(
        edge_bench,
        "load",
        lambda: load_inference(
            workload,
            graph_mode=graph_mode,
            precision=precision,
            device=device,
            batch_size=batch_size,
            weights_dir=weights_dir,
        ),
        device,
    )


def prepare_training(
    edge_bench: Any,
    workload: str,
    batch_size: int,
    device: str,
    *,
    data_dir: Path | None,
    cache_dir: Path,
    weights_dir: Path | None,
) -> Any:
    """The training suite's set-up after :func:`check_and_preflight`: its data (the user's
    ImageFolder, else cached synthetic JPEGs), then the step built inside the measured
    ``load`` phase with its first minibatch. Out of process the worker builds it (and draws
    its own synthetic JPEGs). Returns the step: ``edge_bench.run(step, ...)``, then
    ``step.timing()`` and ``step.close()``."""
    from .remote import load_training_in_worker, out_of_process
    from .training import build_trainer, prepare_training_data

    if out_of_process(edge_bench):
        return load_training_in_worker(
            edge_bench, workload, batch_size, device, data_dir=data_dir, weights_dir=weights_dir
        )
    data = prepare_training_data(workload, batch_size, data_dir=data_dir, cache_root=cache_dir)
    return phase_or_skip(
        edge_bench,
        "load",
        lambda: build_trainer(
            workload, batch_size, device=device, data=data, weights_dir=weights_dir
        ),
        device,
    )
