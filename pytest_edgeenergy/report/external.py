"""Outside measurements turned into reports, so compare and plots render them unchanged.

LoudVA profiling table (``jetson_gpufreq_batch_profiling_loudva.csv``): one row per device
x batch size x pinned GPU frequency, columns ``Throughput`` (items/s), ``Energy`` (J per
batch: it grows with the batch size), ``Latency`` (s per batch), ``Batch Size``,
``Frequency`` (GPU, Hz) and ``Directory`` (the device: AGX, NX, Nano). Derived metrics:
``energy_per_item`` = Energy / Batch Size, ``power_mean`` = Energy / Latency, ``edp`` =
energy per item x latency. Each row is one measurement (no repeats), so stats are null.
"""

from __future__ import annotations

import csv
import math
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_edgeenergy.report.load import ReportError, check_report, frame_from_rows, long_rows
from pytest_edgeenergy.report.model import (
    Metric,
    ResultEntry,
    build_header,
    build_operating_point,
    build_result,
    device_fingerprint,
)

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

LOUDVA_WORKLOAD = "loudva-profiling"

# The devices are named only by folder; their GPU frequency tables identify them
# (max 1377 MHz: AGX Xavier, 1109.25 MHz: Xavier NX, 921.6 MHz: Nano).
LOUDVA_DEVICES: dict[str, tuple[str, str]] = {
    "AGX": ("NVIDIA Jetson AGX Xavier", "tegra194"),
    "NX": ("NVIDIA Jetson Xavier NX", "tegra194"),
    "Nano": ("NVIDIA Jetson Nano", "tegra210"),
}

_COLUMNS = ("Throughput", "Energy", "Latency", "Batch Size", "Frequency", "Directory")


def _metric(unit: str, value: float) -> Metric:
    return {"unit": unit, "value": value, "stats": None, "samples": []}


def _number(row: dict[str, str], column: str, path: Path, line: int) -> float:
    try:
        value = float(row[column])
    except (TypeError, ValueError):
        raise ReportError(path, f"line {line}: {column} {row[column]!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ReportError(path, f"line {line}: {column} {value!r} must be a positive number")
    return value


def loudva_reports(path: Path) -> list[dict[str, Any]]:
    """One validated report per device of the LoudVA table (device = ``Directory``)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ReportError(path, f"cannot be read: {exc.strerror or exc}") from None
    comment = [ln[1:].strip() for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    reader = csv.DictReader(body)
    missing = [c for c in _COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ReportError(path, f"not a LoudVA profiling table: missing {', '.join(missing)}")
    tests: dict[str, list[ResultEntry]] = {}
    first_data_line = len(lines) - len(body) + 2
    for offset, row in enumerate(reader):
        line = first_data_line + offset
        device = row["Directory"]
        batch = int(_number(row, "Batch Size", path, line))
        freq_hz = int(_number(row, "Frequency", path, line))
        energy_j = _number(row, "Energy", path, line)
        latency_s = _number(row, "Latency", path, line)
        energy_per_item = energy_j / batch
        op = build_operating_point({"gpu_freq_hz": freq_hz}, {"gpu_freq_hz": freq_hz})
        tests.setdefault(device, []).append(
            build_result(
                f"{path.name}::{device}[bs{batch}-gpu{freq_hz / 1e6:g}MHz]",
                status="passed",
                name=f"{LOUDVA_WORKLOAD}[bs{batch}-gpu{freq_hz / 1e6:g}MHz]",
                params={"workload": LOUDVA_WORKLOAD, "batch_size": batch, "operating_point": op},
                metrics={
                    "energy_j": _metric("J", energy_j),
                    "energy_per_item": _metric("J/item", energy_per_item),
                    "latency_mean": _metric("s", latency_s),
                    "throughput": _metric("items/s", _number(row, "Throughput", path, line)),
                    "power_mean": _metric("W", energy_j / latency_s),
                    "edp": _metric("J·s", energy_per_item * latency_s),
                },
            )
        )
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    reports = []
    for device, entries in sorted(tests.items()):
        model, soc = LOUDVA_DEVICES.get(device, (device, None))
        header = build_header(
            {
                "model": model,
                "module": None,
                "soc": soc,
                "l4t": None,
                "jetpack": None,
                "kernel": None,
                "nvpmodel_conf_sha256": None,
                "rails": [],
                "total": {"rail": None, "method": "sum"},
                "simulated": False,
                "sim_model": None,
                "fingerprint": device_fingerprint(model, None, soc, None, False, None),
            },
            settings={"source": " ".join(comment), "directory": device},
            software={"python": None, "torch": None, "torchvision": None, "platform": None},
            started_at=stamp,
            run_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{path.name}#{device}").hex,
        )
        header["finished_at"] = header["started_at"]
        reports.append(check_report({**header, "tests": entries}, path))
    return reports


def load_loudva_csv(path: Path) -> pd.DataFrame:
    """The LoudVA table as the long DataFrame of :func:`.load.load` (device = Directory)."""
    rows: list[dict[str, Any]] = []
    for report in loudva_reports(path):
        rows.extend(long_rows(report, str(path)))
    return frame_from_rows(rows)
