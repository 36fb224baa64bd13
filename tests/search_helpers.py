"""Small replay tables with known optima for the search tests.

A toy model with the studies' shape over GPU and CPU clocks (and optionally cores): time
falls with each clock, power rises with it, so energy has an interior minimum and the
fastest point under a power budget sits on the budget's edge. The optimum of every test is
found by brute force over the same table, never written down.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

from pytest_edgeenergy.search.objective import Objective
from pytest_edgeenergy.search.replay import ReplayTable, table_from_rows
from pytest_edgeenergy.search.trial import Trial

GPU_HZ = (306_000_000, 408_000_000, 510_000_000, 612_000_000, 714_000_000, 816_000_000)
CPU_HZ = (729_600_000, 1_036_800_000, 1_344_000_000, 1_510_400_000)
CORES = (2, 4)


def toy_rows(*, cores: bool = False) -> list[dict[str, Any]]:
    rows = []
    for gpu, cpu, n in itertools.product(GPU_HZ, CPU_HZ, CORES if cores else (None,)):
        g, c = gpu / 1e9, cpu / 1e9
        time_s = 0.05 + 0.12 / g + 0.03 / c + (0.01 / n if n else 0.0)
        power_w = 3.0 + 6.0 * g**2 + 1.5 * c**2 + (0.4 * n if n else 0.0)
        row: dict[str, Any] = {"gpu_freq_hz": gpu, "cpu_freq_hz": cpu, "time_s": time_s}
        row["power_w"] = power_w
        if n:
            row["cpu_cores"] = n
        rows.append(row)
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as a CSV table at ``path`` (the columns of the first row)."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def toy_table(*, cores: bool = False) -> ReplayTable:
    return table_from_rows(toy_rows(cores=cores), "toy")


def optimum(table: ReplayTable, objective: Objective) -> Trial:
    ok = [t for t in table.trials if objective.feasible(*t.measured)]
    return min(ok, key=lambda t: objective.value(*t.measured))
