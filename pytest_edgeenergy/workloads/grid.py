"""The suites' grid: every workload of a kind x graph mode x precision x device, as pytest
parameters with readable ids (``resnet18-eager-fp32-cpu``) and a ``workload`` marker, and
the one place that decides whether a combination runs here or is skipped with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from .errors import CombinationUnsupported
from .modes import DEVICES, GRAPH_MODES, PRECISIONS, combination_supported
from .registry import Kind, workload_names

COMBINATION_ARGS = "workload,graph_mode,precision,device"
QUICK_GRAPH_MODE = "eager"
QUICK_PRECISION = "fp32"

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


def skip_reason(
    workload: str, graph_mode: str, precision: str, device: str, *, quick: bool = False
) -> str | None:
    """Why this combination does not run here (None: it runs).

    ``quick`` (``--edge-quick``, a smoke run) keeps eager fp32 only: TorchScript tracing and
    above all torch.compile (about a minute per model on a small CPU) would dominate it.
    """
    ok, reason = combination_supported(workload, graph_mode, precision, device)
    if not ok:
        return reason
    if quick and (graph_mode, precision) != (QUICK_GRAPH_MODE, QUICK_PRECISION):
        return (
            f"--edge-quick runs {QUICK_GRAPH_MODE} {QUICK_PRECISION} only; "
            f"run without it for {graph_mode} {precision}"
        )
    return None


def skip_unless_runnable(
    workload: str, graph_mode: str, precision: str, device: str, *, quick: bool = False
) -> None:
    """``pytest.skip(reason)`` when :func:`skip_reason` gives one."""
    reason = skip_reason(workload, graph_mode, precision, device, quick=quick)
    if reason is not None:
        pytest.skip(reason)


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
) -> None:
    """Skip a combination this machine cannot run (with the reason), then skip one whose
    estimated peak memory will not fit the board (with the estimate and the limit)."""
    from .memory_estimate import estimate_workload_bytes

    skip_unless_runnable(workload, graph_mode, precision, device, quick=is_quick(edge_bench))
    edge_bench.preflight(
        estimate_bytes=estimate_workload_bytes(
            workload, batch_size, precision=precision, device=device
        ),
        what=f"{workload} bs{batch_size} {precision} {graph_mode} on {device}",
    )


def prepare_inference(
    edge_bench: Any,
    workload: str,
    graph_mode: str,
    precision: str,
    device: str,
    batch_size: int,
    weights_dir: Any,
) -> Any:
    """An inference suite's set-up: :func:`check_and_preflight`, then build, load local
    weights, convert and make the first call inside the measured ``load`` phase.

    Returns the :class:`~.inference.InferenceModel`; the suite checks its output, then
    measures ``edge_bench.run(model, items_per_call=batch_size, params=model.params())``.
    """
    from .inference import load_inference

    check_and_preflight(edge_bench, workload, graph_mode, precision, device, batch_size)
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
