"""From a pytest session's measurements to the JSON report, and the gate at the end.

The report is opened when the board is set up and rewritten atomically after every finished
test (see :class:`.report.writer.ReportWriter`), so a killed run keeps every finished test.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .meters.window import WindowResult
    from .report.model import Metric, Validity
    from .report.writer import ReportWriter
    from .session import EnergySession, TestEnergy


def open_writer(es: EnergySession, reports_dir: Path, settings: Mapping[str, Any]) -> ReportWriter:
    """Create the report file (no tests yet) for this session's board."""
    from .report.model import (
        build_device,
        build_header,
        build_idle,
        device_slug,
        file_sha256,
        git_info,
    )
    from .report.writer import ReportWriter, default_report_path

    assert es.board is not None and es.root is not None
    device = build_device(
        es.board.identity, es.board.rails, file_sha256(es.root / "etc/nvpmodel.conf")
    )
    idle = None
    if es.idle is not None and es.idle.valid and es.idle.power_w is not None:
        idle = build_idle(es.idle.power_w, es.idle.rails_w, es.idle.samples)
    header = build_header(
        device,
        command_line=sys.argv,
        settings=dict(settings),
        git=git_info(Path.cwd()),
        idle=idle,
    )
    path = es.settings.report or default_report_path(
        reports_dir, device_slug(device), datetime.now(timezone.utc)
    )
    return ReportWriter(path, header)


def _metric(name: str, values: Sequence[float | None], unit: str | None = None) -> Metric:
    from .report.model import make_metric

    return make_metric(name, [v for v in values if v is not None], unit=unit)


def window_metrics(windows: Sequence[WindowResult]) -> dict[str, Metric]:
    """Metrics of an ``energy`` fixture test: one sample per window, per window label.

    Windows of the first label give the plain names (``energy_j``, ``power_mean``...);
    other labels are prefixed (``load.energy_j``).
    """
    by_label: dict[str, list[WindowResult]] = {}
    for w in windows:
        by_label.setdefault(w.label, []).append(w)
    out: dict[str, Metric] = {}
    for i, (label, ws) in enumerate(by_label.items()):
        prefix = "" if i == 0 else f"{label}."
        out[f"{prefix}energy_j"] = _metric("energy_j", [w.total.energy_j for w in ws], "J")
        out[f"{prefix}energy_net_j"] = _metric("energy_net_j", [w.net_energy_j for w in ws], "J")
        out[f"{prefix}power_mean"] = _metric("power_mean", [w.total.mean_w for w in ws], "W")
        out[f"{prefix}power_peak"] = _metric("power_peak", [w.total.peak_w for w in ws], "W")
        out[f"{prefix}duration"] = _metric("duration", [w.duration_s for w in ws], "s")
        for rail in ws[0].rails:
            out[f"{prefix}rail.{rail}.energy_j"] = _metric(
                "rail_energy_j", [w.rails[rail].energy_j for w in ws if rail in w.rails], "J"
            )
    return out


def window_validity(windows: Sequence[WindowResult]) -> Validity | None:
    """The validity of a test: all windows valid, summed samples, worst jitter."""
    from .report.model import build_validity

    if not windows:
        return None
    reasons = [f"{w.label}: {w.invalid_reason}" for w in windows if not w.valid]
    intervals = [w.interval_ms_mean for w in windows if w.interval_ms_mean is not None]
    jitters = [w.interval_ms_jitter for w in windows if w.interval_ms_jitter is not None]
    return build_validity(
        samples=sum(w.samples for w in windows),
        valid=not reasons,
        reason="; ".join(reasons) or None,
        interval_ms_mean=sum(intervals) / len(intervals) if intervals else None,
        interval_ms_jitter=max(jitters) if jitters else None,
        sampler_cpu_s=sum(w.sampler_cpu_s for w in windows),
        read_errors=sum(sum(w.read_errors.values()) for w in windows),
    )


def test_entry(rec: TestEnergy) -> dict[str, Any]:
    """The report's entry for one finished test."""
    from .report.model import build_operating_point, build_params, build_result

    params = dict(rec.params)
    params.pop("operating_point", None)  # rec.operating_point holds requested and read-back
    point = rec.operating_point
    op = build_operating_point(point["requested"], point["read_back"]) if point else None
    extra: dict[str, Any] | None = dict(rec.extra) or None
    if point:
        pinning = ("id", "verified", "mismatches", "drift", "dry_run")
        extra = {**(extra or {}), "operating_point": {k: point[k] for k in pinning}}
    known = {
        k: params.pop(k, None)
        for k in ("workload", "batch_size", "graph_mode", "precision", "device")
    }
    metrics: dict[str, Any] = dict(rec.metrics) if rec.metrics else window_metrics(rec.windows)
    validity = rec.validity if rec.validity is not None else window_validity(rec.windows)
    status = rec.status or "error"
    reason = rec.reason
    if status == "passed" and validity is not None and not validity["valid"]:
        status, reason = "invalid", validity["reason"]
    return dict(
        build_result(
            rec.nodeid,
            status=status,  # type: ignore[arg-type]
            params=build_params(**known, operating_point=op, **params),
            metrics=metrics,
            validity=validity,
            reason=reason,
            duration_s=rec.duration_s,
            extra=extra,
        )
    )
