"""The harness's own overhead (pytest-benchmark; not part of the test command).

* Time the plugin adds per parametrized test beyond the workload and settle time: a session
  of tests that use ``energy`` + ``operating_point`` + ``batch_size`` with an empty body,
  against the same tests without the plugin's fixtures; (with - without) / tests. Target
  ≤ 5 ms per test.
* Collection of a 10,000-combination grid (operating points x batch sizes). Target ≤ 10 s.

Both run on a virtual Orin Nano tree through ``--edge-root`` (not animated: the figures are
the harness's, not the simulator's), with no idle baseline and settle time 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_plugin_cost import pytest_run_s

from pytest_edgeenergy.sim.tree import create

TESTS = 200

WITH_PLUGIN = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_point(energy, operating_point, batch_size, i):
    pass
"""
WITHOUT_PLUGIN = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_point(i):
    pass
"""


def _pytest(folder: Path, *args: str) -> float:
    return pytest_run_s(folder, *args)[0]


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create("orin-nano", tmp_path_factory.mktemp("harness") / "board")


def test_overhead_per_test(benchmark, board: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    (tmp_path / "with" / "test_w.py").write_text(WITH_PLUGIN.format(n=TESTS))
    (tmp_path / "without" / "test_wo.py").write_text(WITHOUT_PLUGIN.format(n=TESTS))
    edge = [
        f"--edge-root={board}",
        "--edge-idle-s=0",
        "--edge-settle-s=0",
        "--power-mode=15W",
        "--gpu-freq=612MHz",
        "--batch-size=8",
    ]
    rounds = iter(range(100))

    def run() -> float:
        report = f"--edge-report={tmp_path / f'r{next(rounds)}.json'}"
        with_s = _pytest(tmp_path / "with", *edge, report)
        without_s = _pytest(tmp_path / "without")
        return (with_s - without_s) / TESTS

    per_test_s = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["tests"] = TESTS
    benchmark.extra_info["added_ms_per_test_last_round"] = round(per_test_s * 1000, 3)
    print(
        f"\nplugin adds {per_test_s * 1000:.2f} ms per test (target <= 5 ms), "
        f"over {TESTS} pinned tests"
    )


def test_collect_10000_combinations(benchmark, board: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "test_grid.py").write_text(
        "def test_grid(operating_point, batch_size):\n    pass\n"
    )
    # Orin Nano: every offered CPU frequency x every GPU frequency x batch sizes.
    from pytest_edgeenergy.board.detect import detect

    knobs = detect(board).knobs
    n_cpu = len(knobs.cpufreq[0].available_freqs_hz)
    gpu = knobs.gpu
    assert gpu is not None
    n_gpu = len(gpu.available_freqs_hz)
    n_batch = -(-10_000 // (n_cpu * n_gpu))
    batches = ",".join(str(b) for b in range(1, n_batch + 1))
    args = [
        f"--edge-root={board}",
        "--edge-idle-s=0",
        "--cpu-freq=all",
        "--gpu-freq=all",
        f"--batch-size={batches}",
        "--collect-only",
    ]
    seconds = benchmark.pedantic(lambda: _pytest(tmp_path, *args), rounds=2, iterations=1)
    combos = n_cpu * n_gpu * n_batch
    benchmark.extra_info["combinations"] = combos
    print(
        f"\ncollected {combos} combinations ({n_cpu} CPU x {n_gpu} GPU frequencies x "
        f"{n_batch} batch sizes) in {seconds:.2f} s (target <= 10 s)"
    )
