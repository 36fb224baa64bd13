"""The JSON report of a session: its writer, and one entry per finished test.

It takes what it writes (the board, its root, the idle baseline, the test records), never
the session. The report writer is made when the board is set up; the file is written at the
first finished test and rewritten atomically after every one (see
:class:`~pytest_edgeenergy.report.writer.ReportWriter`), so a killed run keeps every
finished test and a run that finished none leaves no file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..board.detect import Board
    from ..meters.meter import IdleBaseline
    from ..meters.window import WindowResult
    from ..report.model import Metric, Validity
    from ..report.writer import ReportWriter
    from .records import TestEnergy


def open_writer(
    board: Board,
    root: Path,
    idle_baseline: IdleBaseline | None,
    settings: Mapping[str, Any],
    *,
    path: Path | None,
    reports_dir: Path,
    overwrite: bool = False,
    overwrite_hint: str = "pass --edge-report-overwrite",
    command_line: Sequence[str] | None = None,
) -> ReportWriter:
    """The report writer for ``board`` (read under ``root``), its header holding the idle
    baseline and the run's ``settings``; written to ``path``, or to a new file named after
    the device and the time in ``reports_dir``. The file is written at the first finished
    test (``overwrite``: an existing file of another run may then be replaced; else it is
    refused, the message saying ``overwrite_hint``). The header records ``command_line``
    (default: this process's ``sys.argv``)."""
    from ..report.model import (
        build_device,
        build_header,
        build_idle,
        device_slug,
        file_sha256,
        git_info,
    )
    from ..report.writer import ReportWriter, default_report_path

    device = build_device(board.identity, board.rails, file_sha256(root / "etc/nvpmodel.conf"))
    idle = None
    if idle_baseline is not None and idle_baseline.valid and idle_baseline.power_w is not None:
        idle = build_idle(idle_baseline.power_w, idle_baseline.rails_w, idle_baseline.samples)
    header = build_header(
        device,
        command_line=sys.argv if command_line is None else command_line,
        settings=dict(settings),
        git=git_info(Path.cwd()),
        idle=idle,
    )
    target = path or default_report_path(
        reports_dir, device_slug(device), datetime.now(timezone.utc)
    )
    document: dict[str, Any] = dict(header)
    document["host"] = host_identity(root)
    ab = ab_from_environment()
    if ab is not None:
        document["ab"] = ab
    return ReportWriter(target, document, overwrite=overwrite, overwrite_hint=overwrite_hint)


def host_identity(root: Path) -> dict[str, str | None]:
    """Which board this is among boards of one model (``edgeenergy merge`` keeps it per
    result): its host name (``/etc/hostname`` under a tree's root; this machine's on ``/``)
    and its device-tree serial number; None where unreadable."""
    import socket

    def text(*names: str) -> str | None:
        for name in names:
            try:
                value = (root / name).read_bytes().split(b"\0")[0].decode("utf-8", "replace")
            except OSError:
                continue
            return value.strip() or None
        return None

    hostname = (socket.gethostname() or None) if root == Path("/") else text("etc/hostname")
    serial = text("proc/device-tree/serial-number", "sys/firmware/devicetree/base/serial-number")
    return {"hostname": hostname, "serial": serial}


def ab_from_environment() -> dict[str, Any] | None:
    """The report's ``ab`` object when ``edgeenergy ab`` runs this session (its JSON in
    ``EDGEENERGY_AB``); None when it is not set. The writer checks its shape."""
    from ..errors import InvalidValue
    from ..report.model import AB_ENV

    text = os.environ.get(AB_ENV)
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InvalidValue(
            f"{AB_ENV} (environment): not a JSON object; edgeenergy ab sets it for the "
            "sessions it runs, unset it otherwise"
        )
    return value


def window_metrics(windows: Sequence[WindowResult]) -> dict[str, Metric]:
    """Metrics of an ``energy`` fixture test (see :func:`.report.windows.labelled_metrics`)."""
    from ..report.windows import labelled_metrics

    return labelled_metrics(windows)


def window_validity(windows: Sequence[WindowResult]) -> Validity | None:
    """The validity of an ``energy`` fixture test; None when it measured no window."""
    from ..report.windows import validity_of

    return validity_of(windows) if windows else None


def test_entry(rec: TestEnergy) -> dict[str, Any]:
    """The report's entry for one finished test."""
    from ..report.model import build_operating_point, build_params, build_result

    params = dict(rec.params)
    params.pop("operating_point", None)  # rec.operating_point holds requested and read-back
    point = rec.operating_point
    op = build_operating_point(point["requested"], point["read_back"]) if point else None
    extra: dict[str, Any] | None = dict(rec.extra) or None
    if rec.windows and not rec.metrics:
        # The first label's metrics have plain names; the order names it.
        labels = list(dict.fromkeys(w.label for w in rec.windows))
        extra = {**(extra or {}), "windows": labels}
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
