"""Adapters from the shared profiling tables to replay tables with the project's knob names.

* ``orin_nano_train_powermodes_180.csv`` (Orin Nano training): ``cores`` -> ``cpu_cores``,
  ``cpu_freq_khz`` x 1000 -> ``cpu_freq_hz``, ``gpu_freq_hz``, ``emc_freq_hz``; the unit of
  work is one minibatch: ``time_s`` = ``minibatch_time_ms_median`` / 1000, ``power_w`` =
  ``power_w_mean``. One group per ``workload`` (resnet, mobnet), 180 points each.
* ``jetson_gpufreq_batch_profiling_loudva.csv`` (inference, three boards): ``Frequency``
  -> ``gpu_freq_hz``, ``Batch Size`` -> ``batch_size``; the unit of work is one image:
  ``time_s`` = ``Latency`` / batch, ``energy_j`` = ``Energy`` / batch (``Energy`` is J per
  batch: ``Energy`` / ``Latency`` is 4-25 W, the boards' range). One group per board
  (``Directory``: AGX, NX, Nano).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from pytest_edgeenergy.search.replay import ReplayTable, table_from_rows

DATA = Path(__file__).resolve().parent.parent / "tests" / "shared" / "data"
ORIN = DATA / "orin_nano_train_powermodes_180.csv"
LOUDVA = DATA / "jetson_gpufreq_batch_profiling_loudva.csv"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def orin_rows() -> list[dict[str, Any]]:
    return [
        {
            "workload": r["workload"],
            "cpu_cores": r["cores"],
            "cpu_freq_hz": int(r["cpu_freq_khz"]) * 1000,
            "gpu_freq_hz": r["gpu_freq_hz"],
            "emc_freq_hz": r["emc_freq_hz"],
            "time_s": float(r["minibatch_time_ms_median"]) / 1000,
            "power_w": r["power_w_mean"],
        }
        for r in _rows(ORIN)
    ]


def loudva_rows() -> list[dict[str, Any]]:
    out = []
    for r in _rows(LOUDVA):
        batch = int(r["Batch Size"])
        out.append(
            {
                "board": r["Directory"],
                "gpu_freq_hz": r["Frequency"],
                "batch_size": batch,
                "time_s": float(r["Latency"]) / batch,
                "energy_j": float(r["Energy"]) / batch,
            }
        )
    return out


def groups() -> dict[str, ReplayTable]:
    """Every workload x board group of both tables, by a readable name."""
    out = {}
    orin = orin_rows()
    for workload in ("resnet", "mobnet"):
        out[f"orin-nano train {workload}"] = table_from_rows(
            orin, ORIN.name, {"workload": workload}
        )
    loudva = loudva_rows()
    for board in ("AGX", "NX", "Nano"):
        out[f"loudva {board}"] = table_from_rows(loudva, LOUDVA.name, {"board": board})
    return out


def write_csvs(folder: Path) -> list[Path]:
    """Both tables with the project's column names (``edgeenergy search --replay``)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, rows in (("orin_nano_train.csv", orin_rows()), ("loudva.csv", loudva_rows())):
        path = folder / name
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        out.append(path)
    return out


if __name__ == "__main__":
    import sys

    for written in write_csvs(Path(sys.argv[1] if len(sys.argv) > 1 else ".")):
        print(written)
