"""Generated AGX-Orin-like power-mode grids: tables the search strategies were never tuned on.

Each seed gives one training workload on one full grid of power modes (cores x CPU clock x
GPU clock x EMC rate, 4,992 points), its time per minibatch and mean power as a profiling
run would record them. The board is the virtual AGX Orin's (:data:`~pytest_edgeenergy.sim.
models.AGX_ORIN`): its CPU, GPU and EMC frequency tables and its power coefficients. What
the seed draws (all assumptions, plausible for DNN training on Orin, none fitted to a real
table):

* the workload: GPU time per minibatch at the top clocks (0.05-0.4 s), the share of it
  bound by memory (0.1-0.7, time ~ EMC rate^-0.6..-1), the data pipeline's CPU work
  (0.2-6x the GPU time on one core at the top clock, spread over the cores with a serial
  fraction 2-20 %) and the training loop's own host time (kernel launches, optimizer:
  5-60 % of the GPU time, one core); the minibatch takes the soft maximum of the data
  pipeline, the host loop and the GPU (a p-norm, p 3-8: the stages overlap, not perfectly),
  the host loop slowed when it shares one or two cores with the loader;
* the power: per domain ``idle + dynamic x f/f_top x (V(f)/V_top)^2 x activity``, voltage
  flat up to a knee (30-55 % of the top clock, at 60-75 % of the top voltage) then linear,
  activity from each domain's utilisation (the CPU's busy core-seconds, the GPU's busy
  share, the memory traffic), the model's coefficients each scaled by 0.8-1.2;
* measurement noise: time times exp(N(0, 0.3-1 %)), power times exp(N(0, 0.5-1.5 %)) (a
  median of some 50 minibatch times and a mean of some 20 power readings: on the Orin Nano
  table neighbours in the flat region differ by that much).

Seeds are split once: :data:`DEV_SEEDS` to tune on, :data:`HELD_OUT_SEEDS` only for the
published figures. ``python benchmarks/orin_grid.py SEED [OUT.csv]`` writes one table as a
CSV with the project's column names (``edgeenergy search --replay``).
"""

from __future__ import annotations

import csv
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_edgeenergy.search.replay import ReplayTable, table_from_rows
from pytest_edgeenergy.sim.models import AGX_ORIN

DEV_SEEDS = tuple(range(0, 48))
"""Tables the strategies may be tuned on."""
HELD_OUT_SEEDS = tuple(range(1000, 1040))
"""Tables for the published figures only: never looked at while tuning."""

CORES = tuple(range(1, AGX_ORIN.cpu_count + 1))
CPU_HZ = tuple(1000 * k for k in AGX_ORIN.clusters[0].freqs_khz[::4])
"""Every 4th CPU step from 115.2 MHz to the top (8 values)."""
GPU_HZ = AGX_ORIN.gpu.freqs_hz
EMC_HZ = AGX_ORIN.emc.rates_hz


@dataclass(frozen=True)
class Workload:
    """One training workload's shape (see the module's docstring)."""

    gpu_s: float
    mem_share: float
    mem_exp: float
    data_ratio: float
    serial: float
    host_ratio: float
    cpu_exp: float
    p: float
    contention: float
    knee_cpu: float
    knee_gpu: float
    v_floor_cpu: float
    v_floor_gpu: float
    scale: dict[str, float]
    noise_time: float
    noise_power: float

    @classmethod
    def draw(cls, rng: random.Random) -> Workload:
        def log_uniform(lo: float, hi: float) -> float:
            return math.exp(rng.uniform(math.log(lo), math.log(hi)))

        return cls(
            gpu_s=log_uniform(0.05, 0.4),
            mem_share=rng.uniform(0.1, 0.7),
            mem_exp=rng.uniform(0.6, 1.0),
            data_ratio=log_uniform(0.2, 6.0),
            serial=rng.uniform(0.02, 0.2),
            host_ratio=log_uniform(0.05, 0.6),
            cpu_exp=rng.uniform(0.8, 1.0),
            p=rng.uniform(3.0, 8.0),
            contention=rng.uniform(0.3, 1.0),
            knee_cpu=rng.uniform(0.3, 0.55),
            knee_gpu=rng.uniform(0.3, 0.55),
            v_floor_cpu=rng.uniform(0.6, 0.75),
            v_floor_gpu=rng.uniform(0.6, 0.75),
            scale={k: rng.uniform(0.8, 1.2) for k in ("core", "gpu", "soc", "ddr", "static")},
            noise_time=rng.uniform(0.003, 0.01),
            noise_power=rng.uniform(0.005, 0.015),
        )


def _dynamic(x: float, knee: float, floor: float) -> float:
    """f/f_top x (V/V_top)^2 with the voltage flat up to the knee, then linear to 1."""
    v = floor + (1.0 - floor) * max(0.0, x - knee) / (1.0 - knee)
    return x * v * v


def point(w: Workload, cores: int, cpu_hz: int, gpu_hz: int, emc_hz: int) -> tuple[float, float]:
    """Noise-free time per minibatch (s) and mean power (W) at one power mode."""
    c = AGX_ORIN.coefficients
    x_cpu, x_gpu, x_emc = cpu_hz / CPU_HZ[-1], gpu_hz / GPU_HZ[-1], emc_hz / EMC_HZ[-1]
    cpu_slow = x_cpu**-w.cpu_exp
    gpu_s = w.gpu_s * ((1 - w.mem_share) / x_gpu + w.mem_share * x_emc**-w.mem_exp)
    data_core_s = w.data_ratio * w.gpu_s * cpu_slow
    data_s = data_core_s * (w.serial + (1 - w.serial) / cores)
    host_s = w.host_ratio * w.gpu_s * cpu_slow * (1 + w.contention / cores)
    time_s = (data_s**w.p + host_s**w.p + gpu_s**w.p) ** (1 / w.p)
    cpu_util = min(1.0, (data_core_s + host_s) / (cores * time_s))
    gpu_util = min(1.0, gpu_s / time_s)
    mem_util = min(1.0, w.mem_share * w.gpu_s * x_emc**-w.mem_exp / time_s + 0.1 * cpu_util)
    s = w.scale
    cpu_w = c.cpu_base_w * s["static"] + cores * (
        c.core_idle_w
        + c.core_dyn_w
        * s["core"]
        * _dynamic(x_cpu, w.knee_cpu, w.v_floor_cpu)
        * (0.15 + 0.85 * cpu_util)
    )
    gpu_w = c.gpu_idle_w * (0.5 + 0.5 * x_gpu) + c.gpu_dyn_w * s["gpu"] * _dynamic(
        x_gpu, w.knee_gpu, w.v_floor_gpu
    ) * (0.06 + 0.94 * gpu_util)
    soc_w = (c.soc_w + c.soc_emc_w * x_emc) * s["soc"]
    ddr_w = c.ddr_w + c.ddr_dyn_w * s["ddr"] * x_emc * (0.25 + 0.75 * mem_util)
    static_w = (c.cv_w + c.io_w) * s["static"]
    return time_s, cpu_w + gpu_w + soc_w + ddr_w + static_w


def _points(w: Workload) -> dict[tuple[int, int, int, int], tuple[float, float]]:
    """Workload ``w``'s time per minibatch (s) and mean power (W) at every power mode, by
    (cores, CPU Hz, GPU Hz, EMC Hz), in the grid's order."""
    return {
        (n, c, g, m): point(w, n, c, g, m)
        for n in CORES
        for c in CPU_HZ
        for g in GPU_HZ
        for m in EMC_HZ
    }


def rows(seed: int) -> list[dict[str, Any]]:
    """Every power mode of seed ``seed``'s workload, as a profiling run records it."""
    rng = random.Random(f"orin-grid:{seed}")
    w = Workload.draw(rng)
    return [
        {
            "cpu_cores": cores,
            "cpu_freq_hz": cpu_hz,
            "gpu_freq_hz": gpu_hz,
            "emc_freq_hz": emc_hz,
            "time_s": time_s * math.exp(rng.gauss(0.0, w.noise_time)),
            "power_w": power_w * math.exp(rng.gauss(0.0, w.noise_power)),
        }
        for (cores, cpu_hz, gpu_hz, emc_hz), (time_s, power_w) in _points(w).items()
    ]


def noise_free(seed: int) -> dict[tuple[int, int, int, int], tuple[float, float]]:
    """Seed ``seed``'s time per minibatch (s) and mean power (W) without the measurement
    noise, by (cores, CPU Hz, GPU Hz, EMC Hz): what a point does, not what one profile
    of it recorded."""
    return _points(Workload.draw(random.Random(f"orin-grid:{seed}")))


def table(seed: int) -> ReplayTable:
    """Seed ``seed``'s grid as a replay table."""
    return table_from_rows(rows(seed), f"orin-grid-{seed}")


def write_csv(seed: int, path: Path) -> Path:
    data = rows(seed)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(data[0]))
        writer.writeheader()
        writer.writerows(data)
    return path


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else DEV_SEEDS[0]
    print(write_csv(seed, Path(sys.argv[2] if len(sys.argv) > 2 else f"orin_grid_{seed}.csv")))
