"""Typed builders for the report: header, device fingerprint, metrics and test entries.

Plain Python only (the plugin imports this at pytest start on small boards). The shapes
mirror ``schema.json``; see ``docs`` there for units.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
import subprocess
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypedDict

from pytest_edgeenergy._version import __version__
from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.redact import redact_argv, redact_value
from pytest_edgeenergy.report.schema import SCHEMA_VERSION

TOOL_NAME = "pytest-edgeenergy"

Status = Literal["passed", "failed", "skipped", "invalid", "error"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "skipped", "invalid", "error")

METRIC_UNITS: dict[str, str] = {
    "energy_j": "J",
    "energy_net_j": "J",
    "energy_per_item": "J/item",
    "energy_per_item_net": "J/item",
    "latency_mean": "s",
    "latency_p50": "s",
    "latency_p90": "s",
    "latency_p99": "s",
    "throughput": "items/s",
    "power_mean": "W",
    "power_peak": "W",
    "edp": "J·s",
    "memory_peak": "B",
    "duration_s": "s",
}
"""Units of the well-known metrics; other metric names are allowed with any unit."""

HIGHER_IS_BETTER: frozenset[str] = frozenset({"throughput", "decode_tokens_per_s"})
"""Metrics where a larger value is an improvement; for every other metric lower is better."""


class ToolInfo(TypedDict):
    name: str
    version: str


class RailInfo(TypedDict):
    name: str
    is_total: bool


class TotalInfo(TypedDict):
    rail: str | None
    method: Literal["rail", "sum"]


class DeviceInfo(TypedDict):
    model: str | None
    module: str | None
    soc: str | None
    l4t: str | None
    jetpack: str | None
    kernel: str | None
    nvpmodel_conf_sha256: str | None
    rails: list[RailInfo]
    total: TotalInfo
    simulated: bool
    sim_model: str | None
    fingerprint: str


class SoftwareInfo(TypedDict):
    python: str | None
    torch: str | None
    torchvision: str | None
    platform: str | None


class GitInfo(TypedDict):
    commit: str
    dirty: bool


class IdleInfo(TypedDict):
    power_w: float
    rails_w: dict[str, float]
    samples: int


class Stats(TypedDict):
    mean: float
    median: float
    stdev: float | None
    min: float
    max: float
    ci95_low: float | None
    ci95_high: float | None
    n: int


class Metric(TypedDict):
    unit: str
    value: float | None
    stats: Stats | None
    samples: list[float]


class OperatingPointInfo(TypedDict):
    requested: dict[str, Any]
    read_back: dict[str, Any]


class _ValidityRequired(TypedDict):
    samples: int
    interval_ms_mean: float | None
    interval_ms_jitter: float | None
    sampler_cpu_s: float | None
    read_errors: int
    valid: bool
    reason: str | None


class Validity(_ValidityRequired, total=False):
    """``tests[].validity``; ``invalid_rails`` only when a rail failed on its own;
    ``sampler`` (``native``/``python``) when the windows' sampler is known."""

    invalid_rails: dict[str, str]
    sampler: str


class _ResultRequired(TypedDict):
    id: str
    name: str
    params: dict[str, Any]
    status: Status
    reason: str | None
    metrics: dict[str, Metric]
    validity: Validity | None
    duration_s: float | None


class ResultEntry(_ResultRequired, total=False):
    """One finished test (``tests[]`` in the report)."""

    extra: dict[str, Any]


AB_ENV = "EDGEENERGY_AB"
"""Environment variable by which ``edgeenergy ab`` gives each of its pytest sessions the
report's ``ab`` object (JSON, see :func:`build_ab`)."""

AbSide = Literal["A", "B"]


class AbInfo(TypedDict):
    """The optional top-level ``ab`` object of a report made inside ``edgeenergy ab``."""

    session: str
    side: AbSide
    round: int
    order: Literal["AB", "BA"]
    ref: str


def build_ab(session: str, side: AbSide, round_no: int, ref: str) -> AbInfo:
    """The ``ab`` object of side ``side`` in round ``round_no`` (1-based) of A/B run
    ``session``: odd rounds run A first (``AB``), even rounds B first (``BA``)."""
    return {
        "session": session,
        "side": side,
        "round": round_no,
        "order": "AB" if round_no % 2 == 1 else "BA",
        "ref": ref,
    }


class ReportHeader(TypedDict):
    """Everything in a report except ``tests``."""

    schema_version: int
    tool: ToolInfo
    run_id: str
    started_at: str
    finished_at: str | None
    command_line: list[str]
    settings: dict[str, Any]
    device: DeviceInfo
    software: SoftwareInfo
    git: GitInfo | None
    idle: IdleInfo | None
    simulated: bool


class Report(ReportHeader):
    tests: list[ResultEntry]


# ---------------------------------------------------------------------------------------
# time


def utc_timestamp(when: datetime | None = None) -> str:
    """ISO 8601 UTC with a ``Z`` suffix, e.g. ``2025-01-31T12:00:00.123456Z``.

    A naive ``when`` is taken as UTC.
    """
    when = datetime.now(timezone.utc) if when is None else when
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_timestamp(text: str) -> datetime:
    """Inverse of :func:`utc_timestamp` (accepts any ISO 8601 offset)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---------------------------------------------------------------------------------------
# device


def device_fingerprint(
    model: str | None,
    module: str | None,
    soc: str | None,
    l4t: str | None,
    simulated: bool,
    sim_model: str | None,
) -> str:
    """Stable 16-hex-digit hash of what makes two runs comparable as 'the same device'."""
    canonical = json.dumps([model, module, soc, l4t, bool(simulated), sim_model])
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes, or None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def build_device(
    identity: Identity, rails: RailMap, nvpmodel_conf_sha256: str | None = None
) -> DeviceInfo:
    """The report's ``device`` object from the board's identity and rail map."""
    return {
        "model": identity.model,
        "module": identity.module,
        "soc": identity.soc,
        "l4t": identity.l4t,
        "jetpack": identity.jetpack,
        "kernel": identity.kernel,
        "nvpmodel_conf_sha256": nvpmodel_conf_sha256,
        "rails": [{"name": r.name, "is_total": r.is_total} for r in rails.rails],
        "total": {"rail": rails.total_rail, "method": rails.total_method},
        "simulated": identity.simulated,
        "sim_model": identity.sim_model,
        "fingerprint": device_fingerprint(
            identity.model,
            identity.module,
            identity.soc,
            identity.l4t,
            identity.simulated,
            identity.sim_model,
        ),
    }


def device_slug(device: Mapping[str, Any]) -> str:
    """Short file-name-safe name of a device: ``sim-agx-orin``, ``nvidia-jetson-nano``..."""
    if device.get("simulated") and device.get("sim_model"):
        base = f"sim-{device['sim_model']}"
    else:
        base = str(device.get("model") or device.get("soc") or "unknown-device")
        base = base.replace("Developer Kit", "").replace("Engineering Reference", "")
    slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")
    return slug[:48].strip("-") or "device"


def device_label(device: Mapping[str, Any]) -> str:
    """Human name of a device, always saying ``(simulated)`` for a virtual board."""
    if device.get("simulated"):
        return f"sim:{device.get('sim_model') or device.get('model') or '?'} (simulated)"
    name = str(device.get("model") or device.get("soc") or "unknown device")
    name = name.replace("NVIDIA ", "").replace(" Developer Kit", "")
    return name.strip() or "unknown device"


# ---------------------------------------------------------------------------------------
# software


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def software_versions() -> SoftwareInfo:
    """Python, torch and torchvision versions from package metadata (never imports torch)."""
    return {
        "python": platform.python_version(),
        "torch": _dist_version("torch"),
        "torchvision": _dist_version("torchvision"),
        "platform": platform.platform(),
    }


def git_info(cwd: Path) -> GitInfo | None:
    """HEAD commit and whether the work tree has changes, or None outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


# ---------------------------------------------------------------------------------------
# header


def build_header(
    device: DeviceInfo,
    *,
    command_line: Sequence[str] = (),
    settings: Mapping[str, Any] | None = None,
    software: SoftwareInfo | None = None,
    git: GitInfo | None = None,
    idle: IdleInfo | None = None,
    started_at: datetime | None = None,
    run_id: str | None = None,
) -> ReportHeader:
    """A report header for a session starting now (``finished_at`` null until finished);
    the command line and settings with their secrets hidden (URL passwords, tokens)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": __version__},
        "run_id": run_id or uuid.uuid4().hex,
        "started_at": utc_timestamp(started_at),
        "finished_at": None,
        "command_line": redact_argv(command_line),
        "settings": redact_value(dict(settings or {})),
        "device": device,
        "software": software if software is not None else software_versions(),
        "git": git,
        "idle": idle,
        "simulated": device["simulated"],
    }


def build_idle(power_w: float, rails_w: Mapping[str, float], samples: int) -> IdleInfo:
    """The idle baseline at the session's operating point."""
    return {
        "power_w": float(power_w),
        "rails_w": {k: float(v) for k, v in rails_w.items()},
        "samples": int(samples),
    }


# ---------------------------------------------------------------------------------------
# metrics

# Two-sided 95 % Student t quantiles by degrees of freedom (scipy stays out of hot paths).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def _t975(dof: int) -> float:
    if dof <= len(_T975):
        return _T975[dof - 1]
    if dof <= 60:
        return 2.000 + (2.042 - 2.000) * (60 - dof) / 30
    if dof <= 120:
        return 1.980 + (2.000 - 1.980) * (120 - dof) / 60
    return 1.960


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _midpoint(lo: float, hi: float) -> float:
    """(lo + hi) / 2 for lo <= hi, without overflow for huge values of one sign and without
    underflow for tiny ones (halving each subnormal first would give 0)."""
    if (lo >= 0) == (hi >= 0):
        return lo + (hi - lo) / 2
    return (lo + hi) / 2


def compute_stats(samples: Iterable[float]) -> Stats | None:
    """Mean, median, sample stdev, min, max and 95 % t-interval of finite samples.

    None when there is no finite sample; stdev and the interval are None below 2 samples.
    """
    xs = sorted(v for v in (float(s) for s in samples) if math.isfinite(v))
    n = len(xs)
    if n == 0:
        return None
    # Work in units of a power of two near the largest magnitude: exact, and no overflow.
    scale = math.ldexp(1.0, math.frexp(max(abs(xs[0]), abs(xs[-1])))[1] - 1)
    scaled = [x / scale for x in xs]
    mean = math.fsum(scaled) / n * scale
    mid = n // 2
    median = xs[mid] if n % 2 else _midpoint(xs[mid - 1], xs[mid])
    stdev: float | None = None
    low: float | None = None
    high: float | None = None
    if n >= 2:
        m = mean / scale
        stdev = _finite(math.sqrt(math.fsum((x - m) ** 2 for x in scaled) / (n - 1)) * scale)
        if stdev is not None:
            half = _t975(n - 1) * stdev / math.sqrt(n)
            low, high = _finite(mean - half), _finite(mean + half)
    return {
        "mean": mean,
        "median": median,
        "stdev": stdev,
        "min": xs[0],
        "max": xs[-1],
        "ci95_low": low,
        "ci95_high": high,
        "n": n,
    }


def make_metric(
    name: str,
    samples: Sequence[float] = (),
    *,
    value: float | None = None,
    unit: str | None = None,
) -> Metric:
    """A metric from per-repeat ``samples``; ``value`` defaults to their mean.

    ``unit`` defaults to the known unit of ``name`` (see :data:`METRIC_UNITS`); non-finite
    numbers become null (JSON has no NaN) and are dropped from the samples.
    """
    if unit is None:
        if name not in METRIC_UNITS:
            known = ", ".join(sorted(METRIC_UNITS))
            raise InvalidValue(f"metric {name!r}: unknown metric, give its unit (known: {known})")
        unit = METRIC_UNITS[name]
    clean = [float(s) for s in samples if math.isfinite(float(s))]
    stats = compute_stats(clean)
    if value is None and stats is not None:
        value = stats["mean"]
    return {"unit": unit, "value": _finite(value), "stats": stats, "samples": clean}


def build_operating_point(
    requested: Mapping[str, Any] | None, read_back: Mapping[str, Any] | None
) -> OperatingPointInfo:
    """``params.operating_point``: what was asked for and what the board reported back."""
    return {"requested": dict(requested or {}), "read_back": dict(read_back or {})}


def build_params(
    *,
    workload: str | None = None,
    batch_size: int | None = None,
    graph_mode: str | None = None,
    precision: str | None = None,
    device: str | None = None,
    operating_point: OperatingPointInfo | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """``tests[].params``: the known parameters (all nullable) plus any ``extra`` ones."""
    return {
        "workload": workload,
        "batch_size": batch_size,
        "graph_mode": graph_mode,
        "precision": precision,
        "device": device,
        "operating_point": operating_point,
        **extra,
    }


def build_result(
    test_id: str,
    *,
    status: Status,
    name: str | None = None,
    params: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Metric] | None = None,
    validity: Validity | None = None,
    reason: str | None = None,
    duration_s: float | None = None,
    extra: Mapping[str, Any] | None = None,
) -> ResultEntry:
    """A ``tests[]`` entry; ``name`` defaults to the nodeid's last part."""
    if status not in STATUSES:
        raise ValueError(f"test {test_id}: status {status!r} is not one of {', '.join(STATUSES)}")
    entry: ResultEntry = {
        "id": test_id,
        "name": name if name is not None else test_id.rsplit("::", 1)[-1],
        "params": dict(params or {}),
        "status": status,
        "reason": reason,
        "metrics": dict(metrics or {}),
        "validity": validity,
        "duration_s": _finite(duration_s),
    }
    if extra is not None:
        entry["extra"] = dict(extra)
    return entry


def build_validity(
    *,
    samples: int,
    valid: bool,
    reason: str | None = None,
    interval_ms_mean: float | None = None,
    interval_ms_jitter: float | None = None,
    sampler_cpu_s: float | None = None,
    read_errors: int = 0,
) -> Validity:
    """``tests[].validity``: whether the measurement windows met the sensor's limits."""
    return {
        "samples": int(samples),
        "interval_ms_mean": _finite(interval_ms_mean),
        "interval_ms_jitter": _finite(interval_ms_jitter),
        "sampler_cpu_s": _finite(sampler_cpu_s),
        "read_errors": int(read_errors),
        "valid": bool(valid),
        "reason": reason,
    }
