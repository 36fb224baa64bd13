"""Cost and accuracy of the power sampler (pytest-benchmark; not part of the test command).

* One sample of all rails on the AGX Orin tree (two INA3221 chips, hwmon) and the Nano tree
  (one INA3221, iio): ours (fds opened once, ``os.pread``) vs a naive open/read/close per
  file. The ratio naive/ours is printed and stored in ``extra_info``.
* CPU time of the sampler thread at 100 Hz and 1 kHz on the AGX Orin tree, as a percentage
  of one core.
* Accuracy: measured energy vs the virtual board's ground-truth counter for 0.1 s, 1 s and
  10 s windows at 10 ms and 100 ms sampling while a CPU workload runs.

Run: ``make bench`` (or ``pytest benchmarks/bench_sampler.py --benchmark-only``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_edgeenergy.board.rails import discover_rails
from pytest_edgeenergy.board.types import RailMap
from pytest_edgeenergy.meters.factory import open_source
from pytest_edgeenergy.meters.ina import InaSource, naive_read_w
from pytest_edgeenergy.meters.meter import Meter
from pytest_edgeenergy.meters.sampler import Sampler
from pytest_edgeenergy.sim.runner import SimProcess
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.sim.truth import read_truth

MEDIAN_S: dict[tuple[str, str], float] = {}


@pytest.fixture(scope="module", params=["agx-orin", "nano"])
def board(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, RailMap]:
    model: str = request.param
    root = create(model, tmp_path_factory.mktemp(model) / "board", update_interval_ms=1.0)
    return model, discover_rails(root)


def test_one_sample_ours(benchmark, board: tuple[str, RailMap]) -> None:  # type: ignore[no-untyped-def]
    model, rails = board
    benchmark.group = f"one sample of all rails: {model} ({len(rails.rails)} rails)"
    with InaSource(rails) as src:
        values = benchmark(src.read)
    assert len(values) == len(rails.rails)
    MEDIAN_S[(model, "ours")] = benchmark.stats.stats.median


def test_one_sample_naive(benchmark, board: tuple[str, RailMap]) -> None:  # type: ignore[no-untyped-def]
    model, rails = board
    benchmark.group = f"one sample of all rails: {model} ({len(rails.rails)} rails)"
    values = benchmark(naive_read_w, rails)
    assert len(values) == len(rails.rails)
    naive = benchmark.stats.stats.median
    ours = MEDIAN_S.get((model, "ours"))
    if ours:
        ratio = naive / ours
        benchmark.extra_info["naive_over_ours"] = round(ratio, 2)
        print(
            f"\n{model}: naive {naive * 1e6:.1f} us, ours {ours * 1e6:.1f} us per sample: "
            f"ours is {ratio:.1f}x cheaper"
        )


@pytest.mark.parametrize("rate_hz", [100, 1000])
def test_sampler_cpu(benchmark, tmp_path: Path, rate_hz: int) -> None:  # type: ignore[no-untyped-def]
    """CPU share of the sampler thread, median of 5 rounds of 3 s, each beside a round of a
    bare thread that only sleeps and wakes at the same rate (this machine's floor)."""
    root = create("agx-orin", tmp_path / "agx", update_interval_ms=1.0)
    rails = discover_rails(root)
    seconds = 3.0
    benchmark.group = "sampler CPU, AGX Orin tree"
    shares: list[float] = []
    floors: list[float] = []

    def run() -> None:
        with InaSource(rails) as src:
            sampler = Sampler(src, interval_s=1.0 / rate_hz)
            sampler.start()
            time.sleep(seconds)
            sampler.stop()
            shares.append(sampler.cpu_s / seconds)
        floors.append(_bare_wakeup_share(rate_hz, seconds))

    benchmark.pedantic(run, rounds=5, iterations=1)
    share, floor = statistics.median(shares), statistics.median(floors)
    benchmark.extra_info["cpu_percent_of_one_core_median"] = round(share * 100, 3)
    benchmark.extra_info["cpu_percent_rounds"] = [round(x * 100, 3) for x in shares]
    benchmark.extra_info["bare_wakeup_floor_percent_median"] = round(floor * 100, 3)
    print(
        f"\nsampler at {rate_hz} Hz on AGX Orin: median {share * 100:.3f} % of one core "
        f"(rounds {', '.join(f'{x * 100:.2f}' for x in shares)}); a thread that only sleeps "
        f"and wakes at {rate_hz} Hz here: median {floor * 100:.3f} %"
    )


def _bare_wakeup_share(rate_hz: int, seconds: float) -> float:
    """CPU share of a thread that does nothing but wake at rate_hz: this machine's floor."""
    out: list[float] = []

    def loop() -> None:
        t0 = time.thread_time()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(1.0 / rate_hz)
        out.append(time.thread_time() - t0)

    t = threading.Thread(target=loop)
    t.start()
    t.join()
    return out[0] / seconds


@pytest.fixture(scope="module")
def loaded_board(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = create("orin-nano", tmp_path_factory.mktemp("acc") / "board", update_interval_ms=5.0)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with SimProcess(root):
            yield root
    finally:
        busy.kill()
        busy.wait()


@pytest.mark.parametrize("interval_ms", [10, 100])
@pytest.mark.parametrize("window_s", [0.1, 1.0, 10.0])
def test_accuracy_vs_ground_truth(  # type: ignore[no-untyped-def]
    benchmark, loaded_board: Path, window_s: float, interval_ms: int
) -> None:
    benchmark.group = "accuracy vs ground truth (orin-nano, CPU load)"

    def run() -> tuple[float, float, bool]:
        with Meter(
            open_source("ina", loaded_board, interval_s=interval_ms / 1000),
            interval_s=interval_ms / 1000,
        ) as meter:
            time.sleep(0.3)
            t_begin = read_truth(loaded_board)
            w = meter.begin("acc")
            time.sleep(window_s)
            t_end = read_truth(loaded_board)
            r = w.end()
        true_j = t_end.total_energy_j_at(r.end_s) - t_begin.total_energy_j_at(r.start_s)
        measured = r.total.energy_j if r.total.energy_j is not None else float("nan")
        return measured, true_j, r.valid

    measured, true_j, valid = benchmark.pedantic(run, rounds=1, iterations=1)
    err = abs(measured - true_j) / true_j * 100 if valid else float("nan")
    benchmark.extra_info.update(
        {"measured_j": measured, "true_j": true_j, "error_percent": err, "valid": valid}
    )
    print(
        f"\nwindow {window_s} s @ {interval_ms} ms: measured {measured:.4f} J, "
        f"true {true_j:.4f} J, error {err:.3f} %{'' if valid else ' (INVALID window)'}"
    )
