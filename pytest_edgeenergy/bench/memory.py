"""Memory: pre-flight checks that refuse a configuration that will not fit, and peak memory.

Exhausting memory on a Jetson often freezes the board instead of raising an error, so a
sweep must refuse a configuration before running it. Two estimators:

* :func:`estimate_peak_bytes`: analytic, from parameter count, precision, batch size and
  activation bytes per item (plus the CUDA context and a host copy of the weights when the
  model is built on the CPU and moved to the GPU: unified memory holds both).
* :func:`probe_peak_bytes`: run the workload at small batches (1 and 2), measure the growth
  of the process's peak RSS (or ``torch.cuda.max_memory_allocated`` on CUDA) and extrapolate
  linearly to the target batch.

:func:`check_fits` compares an estimate with ``MemAvailable`` of the BOARD (``proc/meminfo``
under its root) less a safety margin. Process peaks (:class:`ProcessPeak`) come from the REAL
process's ``/proc/self/status``: the workload runs here whatever board root is measured.
"""

from __future__ import annotations

import ctypes
import gc
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EdgeEnergyError

__all__ = [
    "CUDA_CONTEXT_BYTES",
    "PRECISION_BITS",
    "FitVerdict",
    "MemInfoError",
    "ProbeEstimate",
    "ProcessPeak",
    "board_memory_used_bytes",
    "check_fits",
    "default_margin_bytes",
    "estimate_peak_bytes",
    "extrapolate_linear",
    "format_gib",
    "mem_available_bytes",
    "model_param_bytes",
    "probe_peak_bytes",
    "read_meminfo",
]

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

CUDA_CONTEXT_BYTES = 800 * MIB
"""Loading CUDA costs 700-800 MB on a Jetson before any tensor exists."""
TRAINING_STATE_FACTOR = 4
"""Training holds weights, gradients and two Adam moments: 4 x the weights."""
MARGIN_MIN_BYTES = 512 * MIB
MARGIN_MAX_BYTES = 2 * GIB
MARGIN_FRACTION = 0.10

PRECISION_BITS: dict[str, int] = {
    "fp64": 64,
    "float64": 64,
    "fp32": 32,
    "float32": 32,
    "tf32": 32,
    "fp16": 16,
    "float16": 16,
    "half": 16,
    "bf16": 16,
    "bfloat16": 16,
    "int8": 8,
    "fp8": 8,
    "int4": 4,
}

MEMINFO = "proc/meminfo"
SELF_STATUS = Path("/proc/self/status")
SELF_CLEAR_REFS = Path("/proc/self/clear_refs")


class MemInfoError(EdgeEnergyError, OSError):
    """``proc/meminfo`` under a root is missing or lacks the field asked for."""


# ---- board memory --------------------------------------------------------------------


def read_meminfo(root: Path) -> dict[str, int]:
    """Every ``Key: N kB`` line of ``root/proc/meminfo`` in bytes (counts stay counts)."""
    path = Path(root) / MEMINFO
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as e:
        raise MemInfoError(f"{path}: cannot read memory information ({e.strerror or e})") from e
    from ..board.knobs import parse_meminfo_fields

    return parse_meminfo_fields(text)


def mem_available_bytes(root: Path) -> int:
    """``MemAvailable`` of the board under ``root``, bytes.

    Kernels older than 3.14 lack ``MemAvailable``: then ``MemFree + Buffers + Cached``.
    Raises :class:`MemInfoError` when neither is there.
    """
    info = read_meminfo(root)
    if "MemAvailable" in info:
        return info["MemAvailable"]
    if "MemFree" in info:
        return info["MemFree"] + info.get("Buffers", 0) + info.get("Cached", 0)
    raise MemInfoError(
        f"{Path(root) / MEMINFO}: no MemAvailable or MemFree line; cannot tell free memory"
    )


def board_memory_used_bytes(root: Path) -> int | None:
    """``MemTotal - MemAvailable`` (unified memory in use, CPU and GPU); None if unreadable."""
    try:
        info = read_meminfo(root)
    except MemInfoError:
        return None
    total, avail = info.get("MemTotal"), info.get("MemAvailable")
    if total is None or avail is None:
        return None
    return max(total - avail, 0)


def default_margin_bytes(mem_total_bytes: int | None) -> int:
    """Safety margin kept free: 10 % of RAM, at least 512 MiB, at most 2 GiB."""
    if mem_total_bytes is None:
        return MARGIN_MIN_BYTES
    return int(min(max(MARGIN_FRACTION * mem_total_bytes, MARGIN_MIN_BYTES), MARGIN_MAX_BYTES))


def format_gib(n_bytes: float) -> str:
    """``1.50 GiB``; small values in MiB so they never read as 0.00 GiB."""
    if abs(n_bytes) < 0.1 * GIB:
        return f"{n_bytes / MIB:.0f} MiB"
    return f"{n_bytes / GIB:.2f} GiB"


@dataclass(frozen=True)
class FitVerdict:
    """Whether ``estimate_bytes`` fits in the board's available memory less a margin."""

    what: str
    fits: bool
    estimate_bytes: int
    available_bytes: int | None
    margin_bytes: int
    checked: bool = True
    """False when free memory could not be read (then ``fits`` is True and ``note`` says why)."""
    note: str | None = None

    @property
    def limit_bytes(self) -> int | None:
        """Memory the workload may use: available less the margin."""
        if self.available_bytes is None:
            return None
        return max(self.available_bytes - self.margin_bytes, 0)

    @property
    def reason(self) -> str:
        """``resnet18 bs64: needs ~2.50 GiB, MemAvailable 1.20 GiB less margin 512 MiB ...``"""
        if not self.checked or self.available_bytes is None:
            return f"{self.what}: memory not checked ({self.note or 'no meminfo'})"
        limit = self.limit_bytes
        assert limit is not None
        verdict = "fits" if self.fits else "will not fit"
        return (
            f"{self.what}: needs ~{format_gib(self.estimate_bytes)}, MemAvailable "
            f"{format_gib(self.available_bytes)} less margin {format_gib(self.margin_bytes)} "
            f"= {format_gib(limit)}: {verdict}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "fits": self.fits,
            "checked": self.checked,
            "estimate_bytes": self.estimate_bytes,
            "available_bytes": self.available_bytes,
            "margin_bytes": self.margin_bytes,
            "limit_bytes": self.limit_bytes,
            "reason": self.reason,
        }


def check_fits(
    estimate: int, root: Path, margin_bytes: int | None = None, *, what: str = "workload"
) -> FitVerdict:
    """Compare ``estimate`` (bytes the workload will add) with ``MemAvailable`` under ``root``
    less ``margin_bytes`` (default :func:`default_margin_bytes` of ``MemTotal``).

    Raises :class:`MemInfoError` when the board's meminfo cannot be read, ValueError for a
    negative estimate or margin.
    """
    if isinstance(estimate, bool) or not isinstance(estimate, int) or estimate < 0:
        raise ValueError(
            f"{what}: memory estimate must be a whole number of bytes >= 0, got {estimate!r}"
        )
    if margin_bytes is not None and margin_bytes < 0:
        raise ValueError(f"{what}: margin_bytes must be >= 0, got {margin_bytes!r}")
    available = mem_available_bytes(root)
    if margin_bytes is None:
        margin_bytes = default_margin_bytes(read_meminfo(root).get("MemTotal"))
    fits = estimate <= available - margin_bytes
    return FitVerdict(what, fits, int(estimate), available, int(margin_bytes))


# ---- estimators ----------------------------------------------------------------------


def _precision_bits(precision: str) -> int:
    bits = PRECISION_BITS.get(precision.lower())
    if bits is None:
        raise ValueError(
            f"precision {precision!r} is not known; use one of {', '.join(PRECISION_BITS)}"
        )
    return bits


def estimate_peak_bytes(
    *,
    params: int,
    precision: str = "fp32",
    batch_size: int = 1,
    activation_bytes_per_item: int = 0,
    training: bool = False,
    cuda: bool = False,
    host_copy: bool = False,
    overhead_bytes: int = 0,
) -> int:
    """Analytic peak memory a workload adds, bytes.

    weights (``params`` x precision; x :data:`TRAINING_STATE_FACTOR` when ``training``;
    x 2 with ``host_copy``: built on the CPU and moved to the GPU, unified memory holds
    both) + ``activation_bytes_per_item`` x ``batch_size`` + the CUDA context when ``cuda``
    + ``overhead_bytes``.
    """
    for name, value, minimum in (
        ("params", params, 0),
        ("batch_size", batch_size, 1),
        ("activation_bytes_per_item", activation_bytes_per_item, 0),
        ("overhead_bytes", overhead_bytes, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    weights = math.ceil(params * _precision_bits(precision) / 8)
    if training:
        weights *= TRAINING_STATE_FACTOR
    if host_copy:
        weights *= 2
    total = weights + activation_bytes_per_item * batch_size + overhead_bytes
    if cuda:
        total += CUDA_CONTEXT_BYTES
    return total


def extrapolate_linear(points: Mapping[int, int], batch_size: int) -> int:
    """Least-squares line through ``{batch: bytes}`` evaluated at ``batch_size``, bytes.

    The slope is clamped at 0 and the result is never below the largest probed value at a
    batch <= ``batch_size`` (memory does not shrink with more work). Needs two batch sizes.
    """
    if len(points) < 2:
        raise ValueError(f"need probes at two batch sizes or more, got {sorted(points)}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    xs = [float(b) for b in points]
    ys = [float(v) for v in points.values()]
    mx = math.fsum(xs) / len(xs)
    my = math.fsum(ys) / len(ys)
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    slope = max(math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx, 0.0)
    value = my + slope * (batch_size - mx)
    floor = max((v for b, v in points.items() if b <= batch_size), default=0)
    nearest = round(value)
    # Float noise must not turn an exact line's 1000.0000001 into 1001.
    whole = nearest if abs(value - nearest) <= 1e-9 * max(abs(value), 1.0) else math.ceil(value)
    return max(int(whole), floor, 0)


@dataclass(frozen=True)
class ProbeEstimate:
    """Result of :func:`probe_peak_bytes`."""

    batch_size: int
    estimate_bytes: int
    points: dict[int, int]
    """Peak growth measured per probed batch, bytes."""
    method: str
    """``vmhwm`` (peak RSS, reset per probe), ``rss`` (RSS after the probe) or ``cuda``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "estimate_bytes": self.estimate_bytes,
            "points": {str(b): v for b, v in self.points.items()},
            "method": self.method,
        }


def probe_peak_bytes(
    run: Callable[[int], object],
    *,
    batch_size: int,
    probe_batches: Sequence[int] = (1, 2),
    device: str = "cpu",
    warm: bool = True,
) -> ProbeEstimate:
    """Run ``run(b)`` for each probe batch, measure the memory it adds, extrapolate.

    On CPU the growth is the process's peak RSS above its RSS before the probe (``VmHWM``
    reset through ``/proc/self/clear_refs`` when the kernel allows, else RSS after the
    probe); on ``cuda`` it is ``torch.cuda.max_memory_allocated`` growth. ``warm`` runs the
    smallest probe once unmeasured first, so one-off caches do not pass for per-item memory.
    """
    batches = sorted(set(probe_batches))
    if len(batches) < 2 or batches[0] < 1:
        raise ValueError(f"probe_batches must hold two or more batch sizes >= 1, got {batches}")
    cuda = device.startswith("cuda")
    peak = ProcessPeak()
    if warm:
        run(batches[0])
        if cuda:
            _cuda_sync()
    points: dict[int, int] = {}
    method = "cuda" if cuda else "vmhwm"
    for b in batches:
        gc.collect()
        if cuda:
            torch = _torch()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = int(torch.cuda.memory_allocated())
            run(b)
            torch.cuda.synchronize()
            points[b] = max(int(torch.cuda.max_memory_allocated()) - base, 0)
            continue
        _return_free_heap()
        base = peak.rss_bytes() or 0
        was_reset = peak.reset()
        run(b)
        if was_reset:
            points[b] = max((peak.peak_bytes() or 0) - base, 0)
        else:
            method = "rss"
            points[b] = max((peak.rss_bytes() or 0) - base, 0)
    return ProbeEstimate(batch_size, extrapolate_linear(points, batch_size), points, method)


def _return_free_heap() -> None:
    # Memory freed by an earlier run can stay resident in malloc's heap (glibc raises its
    # mmap threshold after a large free): the base RSS would then include it and the probe
    # that reuses it would measure no growth. malloc_trim hands it back to the kernel.
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return
    trim(0)


def model_param_bytes(model: Any) -> int:
    """Bytes of a torch module's parameters and buffers (duck-typed: no torch import)."""
    total = 0
    for attr in ("parameters", "buffers"):
        for t in getattr(model, attr)():
            total += int(t.numel()) * int(t.element_size())
    return total


# ---- the process's own memory --------------------------------------------------------


def _status_bytes(field: str, status: Path = SELF_STATUS) -> int | None:
    try:
        text = status.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            parts = line.split()
            try:
                return int(parts[1]) * KIB
            except (IndexError, ValueError):
                return None
    return None


class ProcessPeak:
    """Peak resident memory of this process (``VmHWM``), resettable on Linux >= 4.0."""

    def __init__(self) -> None:
        self.resettable: bool | None = None
        """None until :meth:`reset` was tried; False when the kernel refused."""

    def reset(self) -> bool:
        """Reset ``VmHWM`` to the current RSS (writes ``5`` to ``/proc/self/clear_refs``)."""
        if self.resettable is False:
            return False
        try:
            SELF_CLEAR_REFS.write_text("5", encoding="ascii")
        except OSError:
            self.resettable = False
            return False
        self.resettable = True
        return True

    def peak_bytes(self) -> int | None:
        """``VmHWM``: the largest RSS since the process started or the last reset, bytes."""
        return _status_bytes("VmHWM")

    def rss_bytes(self) -> int | None:
        """``VmRSS`` now, bytes."""
        return _status_bytes("VmRSS")


def _torch() -> Any:
    import torch

    return torch


def _cuda_sync() -> None:
    _torch().cuda.synchronize()
