"""Cost of opening an energy window's residency sampler (pytest-benchmark; not part of the
test command).

Every energy window builds a :class:`ResidencySampler` from the session's board. The
control layer's allow-list (:func:`knob_set`) is built once per detected board and shared;
before, it was rebuilt for every window (a stat of every knob file and nvpmodel PARAM
path, then ``realpath`` of each). Both are timed on the Orin Nano and Thor virtual boards;
the ratio rebuilt/shared is printed and stored in ``extra_info``.

Run: ``make bench`` (or ``pytest benchmarks/bench_control.py --benchmark-only``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_edgeenergy.board.detect import Board, detect
from pytest_edgeenergy.control.knobset import _build, knob_set
from pytest_edgeenergy.control.residency import ResidencySampler
from pytest_edgeenergy.sim.tree import create

MEDIAN_S: dict[str, float] = {}


@pytest.fixture(scope="module", params=["orin-nano", "thor"])
def board(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Board:
    model: str = request.param
    return detect(create(model, tmp_path_factory.mktemp(model) / "board"))


def _group(board: Board) -> str:
    return f"residency sampler per window: {board.identity.sim_model}"


def test_sampler_shared_allow_list(benchmark: Any, board: Board) -> None:
    benchmark.group = _group(board)
    knob_set(board)  # the session built it at its start
    sampler = benchmark(ResidencySampler, board, interval_s=3600)
    assert "gpu" in sampler.clocks
    MEDIAN_S[str(board.root)] = benchmark.stats.stats.median


def test_sampler_rebuilt_allow_list(benchmark: Any, board: Board) -> None:
    benchmark.group = _group(board)

    def rebuilt() -> ResidencySampler:
        # What every window paid before the allow-list was shared.
        return ResidencySampler(_build(board), interval_s=3600)

    sampler = benchmark(rebuilt)
    assert "gpu" in sampler.clocks
    shared = MEDIAN_S.get(str(board.root))
    if shared:
        ratio = benchmark.stats.stats.median / shared
        benchmark.extra_info["rebuilt_over_shared"] = round(ratio, 1)
        print(f"\n{board.identity.sim_model}: rebuilt/shared = {ratio:.1f}x per window")
