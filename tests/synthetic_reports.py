"""Synthetic but well-formed reports, for the tests and the benchmarks (``from
synthetic_reports import synthetic_report``; the benchmarks put tests/ on their path).

The numbers follow a toy model with the studies' shape (power linear in GPU frequency,
latency flattening at high frequency, energy per item falling with batch size) plus
multiplicative noise per repeat; they are not measurements and every report made here says
``simulated`` unless asked otherwise.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.report.model import (
    Metric,
    ResultEntry,
    build_device,
    build_header,
    build_operating_point,
    build_result,
    build_validity,
    make_metric,
)

_SOCS = {
    "nano": "tegra210",
    "xavier-nx": "tegra194",
    "agx-orin": "tegra234",
    "orin-nano": "tegra234",
}
_WORKLOAD_GFLOP = {"resnet18": 2.0, "mobilenet_v2": 0.57, "alexnet": 0.727, "bert_tiny": 0.0353}


def synthetic_metrics(
    rng: random.Random,
    *,
    gflop: float,
    batch_size: int,
    gpu_freq_hz: float,
    repeats: int,
    noise: float,
    energy_scale: float = 1.0,
) -> dict[str, Metric]:
    """Per-repeat samples of the usual metrics for one configuration."""
    ghz = gpu_freq_hz / 1e9
    latency_s = gflop * batch_size * 0.004 / min(ghz, 0.8) * (1 + 0.6 / batch_size)
    power_w = 3.0 + 9.0 * ghz
    energy_item = power_w * latency_s / batch_size * energy_scale

    def draw(center: float) -> list[float]:
        return [center * rng.lognormvariate(0.0, noise) for _ in range(repeats)]

    lat = draw(latency_s)
    energy = draw(energy_item)
    return {
        "energy_per_item": make_metric("energy_per_item", energy),
        "energy_j": make_metric("energy_j", [e * batch_size for e in energy]),
        "latency_p90": make_metric("latency_p90", [x * 1.1 for x in lat]),
        "latency_mean": make_metric("latency_mean", lat),
        "throughput": make_metric("throughput", [batch_size / x for x in lat]),
        "power_mean": make_metric("power_mean", draw(power_w)),
        "edp": make_metric("edp", [e * x for e, x in zip(energy, lat, strict=True)]),
    }


def synthetic_report(
    *,
    sim_model: str = "agx-orin",
    simulated: bool = True,
    n_tests: int | None = None,
    workloads: Sequence[str] = ("resnet18", "mobilenet_v2"),
    batch_sizes: Sequence[int] = (8, 16),
    gpu_freqs_hz: Sequence[float] = (612e6, 918e6),
    repeats: int = 5,
    noise: float = 0.02,
    energy_scale: float = 1.0,
    seed: int = 0,
    started_at: datetime | None = None,
    l4t: str = "36.4.3",
    metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A finished report of a synthetic session (validated shape, see ``schema.json``).

    ``n_tests`` > the grid size adds workloads ``w0``, ``w1``...; ``energy_scale`` multiplies
    every energy per item (e.g. 1.1 for a 10 % regression); ``metrics`` keeps only those named.
    """
    rng = random.Random(seed)
    identity = Identity(
        model=f"NVIDIA Jetson {sim_model}",
        soc=_SOCS.get(sim_model, "tegra234"),
        l4t=l4t,
        simulated=simulated,
        sim_model=sim_model if simulated else None,
    )
    device = build_device(identity, RailMap(rails=(), total_rail=None))
    header = build_header(
        device,
        command_line=["pytest", "suites/"],
        settings={"synthetic": True},
        software={"python": "3.11.0", "torch": None, "torchvision": None, "platform": None},
        started_at=started_at,
        run_id=f"{rng.getrandbits(128):032x}",
    )
    names = list(workloads)
    grid = list(itertools.product(names, batch_sizes, gpu_freqs_hz))
    target = len(grid) if n_tests is None else n_tests
    extra = 0
    while len(grid) < target:
        grid += list(itertools.product([f"w{extra}"], batch_sizes, gpu_freqs_hz))
        extra += 1
    tests: list[ResultEntry] = []
    for workload, batch, freq in grid[:target]:
        values = synthetic_metrics(
            rng,
            gflop=_WORKLOAD_GFLOP.get(workload, 1.0),
            batch_size=batch,
            gpu_freq_hz=freq,
            repeats=repeats,
            noise=noise,
            energy_scale=energy_scale,
        )
        if metrics is not None:
            values = {name: values[name] for name in metrics}
        op = build_operating_point({"gpu_freq_hz": int(freq)}, {"gpu_freq_hz": int(freq)})
        tests.append(
            build_result(
                f"suites/test_infer.py::test_infer[{workload}-bs{batch}-gpu{freq / 1e6:g}MHz]",
                status="passed",
                params={
                    "workload": workload,
                    "batch_size": batch,
                    "graph_mode": "eager",
                    "precision": "fp16",
                    "operating_point": op,
                },
                metrics=values,
                validity=build_validity(samples=200, valid=True, interval_ms_mean=10.0),
                duration_s=2.0,
            )
        )
    header["finished_at"] = header["started_at"]
    return {**header, "tests": tests}
